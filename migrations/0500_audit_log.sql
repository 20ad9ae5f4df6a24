-- +goose Up
-- +goose NO TRANSACTION
-- The audit log: one row per security-relevant action, written in the
-- action's own transaction (internal/audit). Never holds a secret.
CREATE TABLE IF NOT EXISTS audit_log (
  tenant_id   CHAR(26)     CHARACTER SET ascii NOT NULL,
  id          CHAR(26)     CHARACTER SET ascii NOT NULL,
  at          DATETIME(6)  NOT NULL,
  actor_kind  VARCHAR(16)  CHARACTER SET ascii NOT NULL,
  actor_id    VARCHAR(64)  CHARACTER SET ascii NOT NULL DEFAULT '',
  actor_name  VARCHAR(200) NOT NULL DEFAULT '',
  action      VARCHAR(64)  CHARACTER SET ascii NOT NULL,
  target_type VARCHAR(32)  CHARACTER SET ascii NOT NULL DEFAULT '',
  target_id   VARCHAR(64)  CHARACTER SET ascii NOT NULL DEFAULT '',
  ip          VARCHAR(64)  CHARACTER SET ascii NOT NULL DEFAULT '',
  detail      JSON         NULL,
  PRIMARY KEY (tenant_id, id),
  KEY ix_audit_action (tenant_id, action, id),
  KEY ix_audit_actor (tenant_id, actor_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
