-- +goose Up
-- +goose NO TRANSACTION
-- Notifications (e-mail) as an outbox (docs/NOTIFICATIONS.md): one row per
-- message, written in the transaction of its cause with a unique key
-- (<kind>:<lead or user>:<cause>), sent by the worker with that key as the
-- Message-ID. state: pending, sent, preview (kept for /settings/mail, no
-- SMTP configured), skipped (the recipient turned the kind off), failed
-- (a permanent SMTP refusal, or still failing after 24 h). The rendered
-- message is kept once sent or previewed.
CREATE TABLE IF NOT EXISTS notifications (
  tenant_id   CHAR(26)     CHARACTER SET ascii NOT NULL,
  id          CHAR(26)     CHARACTER SET ascii NOT NULL,
  nkey        VARCHAR(160) CHARACTER SET ascii NOT NULL,
  kind        VARCHAR(32)  CHARACTER SET ascii NOT NULL,
  user_id     CHAR(26)     CHARACTER SET ascii NOT NULL,
  lead_id     CHAR(26)     CHARACTER SET ascii NULL,
  data        JSON         NOT NULL,
  state       VARCHAR(16)  CHARACTER SET ascii NOT NULL DEFAULT 'pending',
  attempts    INT          NOT NULL DEFAULT 0,
  created_at  DATETIME(6)  NOT NULL,
  next_at     DATETIME(6)  NOT NULL,
  done_at     DATETIME(6)  NULL,
  last_error  VARCHAR(500) NULL,
  to_addr     VARCHAR(320) NULL,
  subject     VARCHAR(300) NULL,
  body_text   MEDIUMTEXT   NULL,
  body_html   MEDIUMTEXT   NULL,
  PRIMARY KEY (tenant_id, id),
  UNIQUE KEY ux_notifications_key (tenant_id, nkey),
  KEY ix_notifications_due (tenant_id, state, next_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
