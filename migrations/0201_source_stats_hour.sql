-- +goose Up
-- +goose NO TRANSACTION
-- Per-hour delivery counters per source, written additively by the
-- monitor's recorder (INSERT … ON DUPLICATE KEY UPDATE n = n + VALUES(n)),
-- so any number of processes can flush into the same rows.
CREATE TABLE IF NOT EXISTS source_stats_hour (
  tenant_id        CHAR(26)    CHARACTER SET ascii NOT NULL,
  source_id        CHAR(26)    CHARACTER SET ascii NOT NULL,
  bucket           DATETIME    NOT NULL,
  deliveries       BIGINT      NOT NULL DEFAULT 0,
  duplicates       BIGINT      NOT NULL DEFAULT 0,
  rejected         BIGINT      NOT NULL DEFAULT 0,
  dead_letters     BIGINT      NOT NULL DEFAULT 0,
  reconcile_new    BIGINT      NOT NULL DEFAULT 0,
  reconcile_known  BIGINT      NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, source_id, bucket)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
