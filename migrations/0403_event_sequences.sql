-- +goose Up
-- +goose NO TRANSACTION
-- The last event sequence number per resource (a lead, an alert): the row
-- is locked by the emitting transaction, so numbers increase in commit order.
CREATE TABLE IF NOT EXISTS event_sequences (
  tenant_id    CHAR(26)  CHARACTER SET ascii NOT NULL,
  resource_id  CHAR(26)  CHARACTER SET ascii NOT NULL,
  seq          BIGINT    NOT NULL,
  PRIMARY KEY (tenant_id, resource_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
