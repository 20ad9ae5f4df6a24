-- +goose Up
-- +goose NO TRANSACTION
-- Login has only email + password, so one global lookup table maps an email
-- to its tenant (the one place a key does not start with tenant_id).
CREATE TABLE IF NOT EXISTS user_logins (
  email     VARCHAR(254) NOT NULL,
  tenant_id CHAR(26)     CHARACTER SET ascii NOT NULL,
  user_id   CHAR(26)     CHARACTER SET ascii NOT NULL,
  PRIMARY KEY (email)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
