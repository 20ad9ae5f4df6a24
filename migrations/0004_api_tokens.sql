-- +goose Up
-- +goose NO TRANSACTION
CREATE TABLE IF NOT EXISTS api_tokens (
  tenant_id    CHAR(26)    CHARACTER SET ascii NOT NULL,
  id           CHAR(26)    CHARACTER SET ascii NOT NULL,
  name         VARCHAR(200) NOT NULL,
  token_hash   BINARY(32)  NOT NULL,
  created_by   CHAR(26)    CHARACTER SET ascii NULL,
  created_at   DATETIME(6) NOT NULL,
  last_used_at DATETIME(6) NULL,
  revoked_at   DATETIME(6) NULL,
  PRIMARY KEY (tenant_id, id),
  UNIQUE KEY uq_api_tokens_hash (tenant_id, token_hash)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
