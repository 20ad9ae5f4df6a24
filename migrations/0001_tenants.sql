-- +goose Up
-- +goose NO TRANSACTION
CREATE TABLE IF NOT EXISTS tenants (
  id         CHAR(26)     CHARACTER SET ascii NOT NULL,
  slug       VARCHAR(63)  CHARACTER SET ascii NOT NULL,
  name       VARCHAR(200) NOT NULL,
  created_at DATETIME(6)  NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uq_tenants_slug (slug)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
