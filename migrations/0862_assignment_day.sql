-- +goose Up
-- +goose NO TRANSACTION
-- Round-robin positions count from the start of the day (day: days since
-- 1970-01-01 in the tenant's routing zone, assignment_settings.time_zone),
-- so the position alone says whom a daily cap has stopped
-- (docs/ARCHITECTURE.md, "Daily caps"). A reservation keeps the day its
-- positions belong to. One ALTER per table: atomic, re-runnable.
ALTER TABLE assignment_counters ADD COLUMN IF NOT EXISTS day INT NOT NULL DEFAULT 0;
