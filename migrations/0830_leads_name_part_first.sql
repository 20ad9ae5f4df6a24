-- +goose Up
-- +goose NO TRANSACTION
-- The parts of a lead's name where its sender sends them apart (HubSpot's
-- firstname and lastname properties, one event each): a record with one
-- part changes that part and keeps the other (docs/SENDERS.md, "HubSpot").
-- They hold while name is their join; '' when the sender never sent parts.
-- One ALTER: atomic, re-runnable.
ALTER TABLE leads
  ADD COLUMN IF NOT EXISTS name_part_first VARCHAR(255) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE leads DROP COLUMN IF EXISTS name_part_first;
