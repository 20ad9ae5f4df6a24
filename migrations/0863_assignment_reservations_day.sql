-- +goose Up
-- +goose NO TRANSACTION
-- The day (as assignment_counters.day) a reservation's positions belong
-- to: a reservation left from an earlier day is never handed out.
ALTER TABLE assignment_reservations ADD COLUMN IF NOT EXISTS day INT NOT NULL DEFAULT 0;
