-- +goose Up
-- +goose NO TRANSACTION
-- Alert lifecycle events (fired, resolved, acknowledged), written in the
-- same transaction as the change, so notifications (email, outbound
-- webhooks) can be delivered from here later; delivered_at marks them done.
CREATE TABLE IF NOT EXISTS alert_events (
  tenant_id     CHAR(26)     CHARACTER SET ascii NOT NULL,
  id            CHAR(26)     CHARACTER SET ascii NOT NULL,
  alert_id      CHAR(26)     CHARACTER SET ascii NOT NULL,
  source_id     CHAR(26)     CHARACTER SET ascii NOT NULL,
  rule          VARCHAR(32)  CHARACTER SET ascii NOT NULL,
  type          VARCHAR(16)  CHARACTER SET ascii NOT NULL,
  at            DATETIME(6)  NOT NULL,
  actor         VARCHAR(200) NULL,
  detail        JSON         NOT NULL,
  delivered_at  DATETIME(6)  NULL,
  PRIMARY KEY (tenant_id, id),
  KEY ix_alert_events_alert (tenant_id, alert_id, id),
  KEY ix_alert_events_undelivered (tenant_id, delivered_at, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
