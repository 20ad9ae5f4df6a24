-- +goose Up
-- +goose NO TRANSACTION
-- When a rule's escalation reassigned the lead (once per lead: the
-- sweep's UPDATE is conditional on escalated_at IS NULL), from whom and
-- to whom (its timeline entry). One ALTER: atomic, re-runnable.
ALTER TABLE leads
  ADD COLUMN IF NOT EXISTS escalated_at DATETIME(6) NULL;
