-- +goose Up
-- +goose NO TRANSACTION
CREATE TABLE IF NOT EXISTS sessions (
  tenant_id  CHAR(26)    CHARACTER SET ascii NOT NULL,
  id         CHAR(26)    CHARACTER SET ascii NOT NULL,
  user_id    CHAR(26)    CHARACTER SET ascii NOT NULL,
  token_hash BINARY(32)  NOT NULL,
  created_at DATETIME(6) NOT NULL,
  expires_at DATETIME(6) NOT NULL,
  PRIMARY KEY (tenant_id, id),
  KEY ix_sessions_user (tenant_id, user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
