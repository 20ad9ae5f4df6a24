-- +goose Up
-- +goose NO TRANSACTION
-- The duplicates a server answered from memory, as it logged them at each
-- flush (internal/webhooks/duplog.go): one row per tenant and flush of at
-- most 500 originals, their counts packed in body. The worker folds the
-- rows into deliveries (dup_count, dup_first_at, dup_last_at) and deletes
-- them in the same transaction. dups is the sum of the counts in body; id
-- is a ULID, so a tenant's rows fold in the order they were logged.
CREATE TABLE IF NOT EXISTS delivery_dup_log (
  tenant_id CHAR(26) CHARACTER SET ascii NOT NULL,
  id CHAR(26) CHARACTER SET ascii NOT NULL,
  dups INT NOT NULL,
  logged_at DATETIME(6) NOT NULL,
  body LONGBLOB NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
