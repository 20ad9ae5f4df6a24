-- +goose Up
-- +goose NO TRANSACTION
-- A person's own time zone (an IANA name such as America/New_York): every
-- time the web UI shows or reads is in it. '' until the browser reports one
-- at sign-in; the UI then falls back to UTC.
ALTER TABLE users ADD COLUMN IF NOT EXISTS time_zone VARCHAR(64) CHARACTER SET ascii NOT NULL DEFAULT '';
