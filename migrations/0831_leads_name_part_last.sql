-- +goose Up
-- +goose NO TRANSACTION
-- The last part of a lead's name (see 0830_leads_name_part_first.sql).
-- One ALTER: atomic, re-runnable.
ALTER TABLE leads
  ADD COLUMN IF NOT EXISTS name_part_last VARCHAR(255) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE leads DROP COLUMN IF EXISTS name_part_last;
