-- +goose Up
-- +goose NO TRANSACTION
-- ix_deliveries_pending (tenant_id, processed_at, received_at) served the
-- sweeper before delivery states; ix_deliveries_state (0300) serves it and
-- the per-state lists now, and no query reads this one. Every claim
-- inserted an entry and every processed or failed delivery moved one.
ALTER TABLE deliveries DROP KEY ix_deliveries_pending;
