-- +goose Up
-- +goose NO TRANSACTION
-- Idempotency-Key outcomes (PRODUCT.md §6). The primary key is the claim:
-- INSERT IGNORE lets exactly one request own a key per tenant. lock_token
-- names the current owner so a reclaimer (after locked_until) and a slow
-- original cannot both complete; a row past expires_at counts as absent.
CREATE TABLE IF NOT EXISTS idempotency_keys (
  tenant_id    CHAR(26)     CHARACTER SET ascii NOT NULL,
  idem_key     VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  fingerprint  BINARY(32)   NOT NULL,
  state        VARCHAR(16)  CHARACTER SET ascii NOT NULL,
  lock_token   CHAR(26)     CHARACTER SET ascii NOT NULL,
  locked_until DATETIME(6)  NOT NULL,
  status       SMALLINT     NULL,
  headers      JSON         NULL,
  body         LONGBLOB     NULL,
  created_at   DATETIME(6)  NOT NULL,
  expires_at   DATETIME(6)  NOT NULL,
  PRIMARY KEY (tenant_id, idem_key),
  KEY ix_idem_expires (tenant_id, expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
