-- +goose Up
-- +goose NO TRANSACTION
-- One row per (event, endpoint). state: pending (waits for next_attempt_at),
-- queued (its attempt task is in Asynq), sending (an attempt is running,
-- until lease_until), delivered, failed (schedule exhausted, endpoint
-- disabled). attempts counts attempts started; the attempt identity
-- (TaskID) is id + the attempt number, and an attempt only runs when it
-- moves attempts from n-1 to n, so no attempt is sent twice. A replay or
-- recover restarts the retry schedule at schedule_base = attempts.
CREATE TABLE IF NOT EXISTS event_deliveries (
  tenant_id        CHAR(26)      CHARACTER SET ascii NOT NULL,
  id               CHAR(26)      CHARACTER SET ascii NOT NULL,
  event_id         CHAR(26)      CHARACTER SET ascii NOT NULL,
  endpoint_id      CHAR(26)      CHARACTER SET ascii NOT NULL,
  state            VARCHAR(16)   CHARACTER SET ascii NOT NULL,
  attempts         INT           NOT NULL DEFAULT 0,
  schedule_base    INT           NOT NULL DEFAULT 0,
  next_attempt_at  DATETIME(6)   NOT NULL,
  queued_by        CHAR(26)      CHARACTER SET ascii NULL,
  queued_at        DATETIME(6)   NULL,
  lease_until      DATETIME(6)   NULL,
  last_status      INT           NULL,
  last_error       VARCHAR(1000) NULL,
  delivered_at     DATETIME(6)   NULL,
  created_at       DATETIME(6)   NOT NULL,
  updated_at       DATETIME(6)   NOT NULL,
  PRIMARY KEY (tenant_id, id),
  UNIQUE KEY uq_event_deliveries (tenant_id, endpoint_id, event_id),
  KEY ix_event_deliveries_due (tenant_id, state, next_attempt_at),
  KEY ix_event_deliveries_endpoint (tenant_id, endpoint_id, state, next_attempt_at),
  KEY ix_event_deliveries_event (tenant_id, event_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
