-- +goose Up
-- +goose NO TRANSACTION
-- Signing secrets of an endpoint, encrypted. expires_at is NULL for the
-- current secret; a rotated-out one signs too until it expires.
CREATE TABLE IF NOT EXISTS event_endpoint_secrets (
  tenant_id    CHAR(26)        CHARACTER SET ascii NOT NULL,
  endpoint_id  CHAR(26)        CHARACTER SET ascii NOT NULL,
  id           CHAR(26)        CHARACTER SET ascii NOT NULL,
  secret_enc   VARBINARY(1024) NOT NULL,
  created_at   DATETIME(6)     NOT NULL,
  expires_at   DATETIME(6)     NULL,
  PRIMARY KEY (tenant_id, endpoint_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
