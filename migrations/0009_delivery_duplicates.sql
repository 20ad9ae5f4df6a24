-- +goose Up
-- +goose NO TRANSACTION
-- One row per duplicate arrival, so the timeline lists every delivery.
CREATE TABLE IF NOT EXISTS delivery_duplicates (
  tenant_id   CHAR(26)    CHARACTER SET ascii NOT NULL,
  id          CHAR(26)    CHARACTER SET ascii NOT NULL,
  source_id   CHAR(26)    CHARACTER SET ascii NOT NULL,
  delivery_row_id CHAR(26) CHARACTER SET ascii NOT NULL,
  received_at DATETIME(6) NOT NULL,
  PRIMARY KEY (tenant_id, id),
  KEY ix_dups_delivery (tenant_id, delivery_row_id),
  KEY ix_dups_source_time (tenant_id, source_id, received_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
