-- +goose Up
-- +goose NO TRANSACTION
-- Delivery states (PRODUCT.md §4): received → processed | failed, plus
-- dead_letter. One ALTER (atomic): the column and the index the sweeper and
-- the per-state lists walk with a keyset cursor (received_at, id).
ALTER TABLE deliveries
  ADD COLUMN state VARCHAR(16) CHARACTER SET ascii NOT NULL DEFAULT 'received',
  ADD KEY ix_deliveries_state (tenant_id, state, received_at, id);
