-- +goose Up
-- +goose NO TRANSACTION
-- The order key (see 0323_leads_order_key.sql) of the record that last set
-- each name part (0830, 0831). A sender that sends the parts as separate
-- events (HubSpot's contact.propertyChange of firstname, of lastname) may
-- have them processed in either order: the older event is stale for the
-- lead as a whole but still the newest for its own part, so each part is
-- ordered by its own key (docs/SENDERS.md, "HubSpot"). '' where unknown.
-- One ALTER: atomic, re-runnable; appended columns are added in place.
ALTER TABLE leads
  ADD COLUMN IF NOT EXISTS name_part_first_key VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
  ADD COLUMN IF NOT EXISTS name_part_last_key VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE leads DROP COLUMN IF EXISTS name_part_first_key, DROP COLUMN IF EXISTS name_part_last_key;
