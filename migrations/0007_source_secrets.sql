-- +goose Up
-- +goose NO TRANSACTION
CREATE TABLE IF NOT EXISTS source_secrets (
  tenant_id  CHAR(26)    CHARACTER SET ascii NOT NULL,
  source_id  CHAR(26)    CHARACTER SET ascii NOT NULL,
  id         CHAR(26)    CHARACTER SET ascii NOT NULL,
  secret_enc VARBINARY(1024) NOT NULL,
  created_at DATETIME(6) NOT NULL,
  expires_at DATETIME(6) NULL,
  PRIMARY KEY (tenant_id, source_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
