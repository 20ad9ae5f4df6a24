-- +goose Up
-- +goose NO TRANSACTION
-- The processing_failures alert rule's settings (defaults: on, 1 failure).
ALTER TABLE alert_rules
  ADD COLUMN failures_enabled BOOLEAN NOT NULL DEFAULT TRUE,
  ADD COLUMN failures_min     INT     NOT NULL DEFAULT 1;
