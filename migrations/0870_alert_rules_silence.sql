-- +goose Up
-- +goose NO TRANSACTION
-- The silence alert rule's settings (defaults: on, fire below 0.2 of the
-- source's usual volume for the hour of the week). Re-runnable.
ALTER TABLE alert_rules
  ADD COLUMN IF NOT EXISTS silence_enabled  BOOLEAN NOT NULL DEFAULT TRUE,
  ADD COLUMN IF NOT EXISTS silence_fraction DOUBLE  NOT NULL DEFAULT 0.2;
