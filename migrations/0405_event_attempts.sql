-- +goose Up
-- +goose NO TRANSACTION
-- Every delivery attempt: when, the HTTP status (NULL when none came back),
-- latency, the first bytes of the response, the error (guard refusal,
-- timeout, connection refused). ids are ULIDs: newest first by id.
CREATE TABLE IF NOT EXISTS event_attempts (
  tenant_id     CHAR(26)      CHARACTER SET ascii NOT NULL,
  id            CHAR(26)      CHARACTER SET ascii NOT NULL,
  delivery_id   CHAR(26)      CHARACTER SET ascii NOT NULL,
  event_id      CHAR(26)      CHARACTER SET ascii NOT NULL,
  endpoint_id   CHAR(26)      CHARACTER SET ascii NOT NULL,
  attempt       INT           NOT NULL,
  attempted_at  DATETIME(6)   NOT NULL,
  status        INT           NULL,
  latency_ms    INT           NOT NULL,
  response      VARCHAR(1024) NOT NULL DEFAULT '',
  error         VARCHAR(1000) NULL,
  outcome       VARCHAR(16)   CHARACTER SET ascii NOT NULL,
  PRIMARY KEY (tenant_id, id),
  UNIQUE KEY uq_event_attempts (tenant_id, delivery_id, attempt),
  KEY ix_event_attempts_endpoint (tenant_id, endpoint_id, id),
  KEY ix_event_attempts_event (tenant_id, event_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
