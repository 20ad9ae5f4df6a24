-- +goose Up
-- +goose NO TRANSACTION
-- The monitoring page lists every delivery that arrived again in the
-- chart's window, however old its original (deliveries.DuplicatedBetween,
-- DuplicatedSummary): a range on the last repeat's time per source, so
-- the list and the count above it read the same rows. One ALTER (atomic).
ALTER TABLE deliveries
  ADD KEY ix_deliveries_dup_last (tenant_id, source_id, dup_last_at);
