-- +goose Up
-- +goose NO TRANSACTION
-- Erased leads (PRODUCT.md §5c): what is left of a lead after its erasure,
-- so that a later delivery or reconcile record of it is dropped instead of
-- re-creating it. key_hash is SHA-256 of the source id, a NUL byte and the
-- natural key (internal/leads/tombstone.go); never the email or the name.
CREATE TABLE IF NOT EXISTS lead_tombstones (
  tenant_id  CHAR(26)    CHARACTER SET ascii NOT NULL,
  key_hash   BINARY(32)  NOT NULL,
  erased_at  DATETIME(6) NOT NULL,
  PRIMARY KEY (tenant_id, key_hash)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE IF EXISTS lead_tombstones;
