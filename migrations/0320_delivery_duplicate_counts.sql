-- +goose Up
-- +goose NO TRANSACTION
-- Duplicates are aggregated on their original delivery (PRODUCT.md §4
-- "Duplicates"): a count with first and last arrival, written by the same
-- group-commit statement that claims deliveries, instead of one row per
-- duplicate. dups_counted is how many of them leads.times_seen already
-- holds; outcome is what processing did to the lead (created, updated,
-- unchanged, stale). One ALTER (atomic).
ALTER TABLE deliveries
  ADD COLUMN dup_count INT NOT NULL DEFAULT 0,
  ADD COLUMN dup_first_at DATETIME(6) NULL,
  ADD COLUMN dup_last_at DATETIME(6) NULL,
  ADD COLUMN dups_counted INT NOT NULL DEFAULT 0,
  ADD COLUMN outcome VARCHAR(16) CHARACTER SET ascii NULL;
