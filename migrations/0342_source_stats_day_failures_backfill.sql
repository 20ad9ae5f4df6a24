-- +goose Up
-- +goose NO TRANSACTION
-- processing_failures (deliveries marked failed) and backfill (a source's
-- first reconcile run) per source and day. One ALTER (atomic on MySQL 8 and MariaDB).
ALTER TABLE source_stats_day
  ADD COLUMN processing_failures BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN backfill            BIGINT NOT NULL DEFAULT 0;
