-- +goose Up
-- +goose NO TRANSACTION
-- The lead timeline: human changes, notes, reconcile touches. Deliveries
-- and duplicates are joined in from their own tables.
CREATE TABLE IF NOT EXISTS lead_events (
  tenant_id  CHAR(26)    CHARACTER SET ascii NOT NULL,
  lead_id    CHAR(26)    CHARACTER SET ascii NOT NULL,
  id         CHAR(26)    CHARACTER SET ascii NOT NULL,
  kind       VARCHAR(32) CHARACTER SET ascii NOT NULL,
  actor_id   CHAR(26)    CHARACTER SET ascii NULL,
  actor_name VARCHAR(255) NOT NULL DEFAULT '',
  detail     JSON        NULL,
  at         DATETIME(6) NOT NULL,
  PRIMARY KEY (tenant_id, lead_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
