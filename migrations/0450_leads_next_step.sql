-- +goose Up
-- +goose NO TRANSACTION
-- Human-owned follow-up of a lead: the next step (text) and when it is due.
-- Never written by ingest or reconcile. One ALTER: it is atomic, so a
-- failed run leaves nothing half-applied.
ALTER TABLE leads
  ADD COLUMN next_step VARCHAR(500) NOT NULL DEFAULT '',
  ADD COLUMN due_at DATETIME(6) NULL;
