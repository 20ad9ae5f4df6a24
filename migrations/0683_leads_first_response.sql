-- +goose Up
-- +goose NO TRANSACTION
-- The first-response clock of a lead: when a rule assigned it, when a
-- first response is due, and when a person first responded (status
-- change, note or next step). One ALTER: atomic, re-runnable.
ALTER TABLE leads
  ADD COLUMN IF NOT EXISTS assigned_at DATETIME(6) NULL,
  ADD COLUMN IF NOT EXISTS first_response_due_at DATETIME(6) NULL,
  ADD COLUMN IF NOT EXISTS first_responded_at DATETIME(6) NULL;
