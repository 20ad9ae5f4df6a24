-- +goose Up
-- +goose NO TRANSACTION
CREATE TABLE IF NOT EXISTS users (
  tenant_id     CHAR(26)     CHARACTER SET ascii NOT NULL,
  id            CHAR(26)     CHARACTER SET ascii NOT NULL,
  email         VARCHAR(254) NOT NULL,
  name          VARCHAR(200) NOT NULL,
  password_hash VARCHAR(255) CHARACTER SET ascii NOT NULL,
  role          VARCHAR(16)  CHARACTER SET ascii NOT NULL,
  disabled_at   DATETIME(6)  NULL,
  created_at    DATETIME(6)  NOT NULL,
  PRIMARY KEY (tenant_id, id),
  UNIQUE KEY uq_users_tenant_email (tenant_id, email)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
