-- +goose Up
-- +goose NO TRANSACTION
-- A run saves its place after every page (page_cursor: the sender API's
-- token of the next page; newest: the newest record time seen in the
-- window so far), so a run stopped by its deadline is resumed by the next
-- one instead of starting the window over. backfill_count: records of a
-- source's first run (history, not webhook loss). One ALTER (atomic).
ALTER TABLE reconcile_runs
  ADD COLUMN page_cursor    VARCHAR(4096) NULL,
  ADD COLUMN newest         DATETIME(6)   NULL,
  ADD COLUMN backfill_count INT           NOT NULL DEFAULT 0;
