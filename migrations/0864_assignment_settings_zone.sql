-- +goose Up
-- +goose NO TRANSACTION
-- The zone whose midnight starts a new day for daily caps (an IANA name;
-- '' is UTC).
ALTER TABLE assignment_settings ADD COLUMN IF NOT EXISTS time_zone VARCHAR(64) CHARACTER SET ascii NOT NULL DEFAULT '';
