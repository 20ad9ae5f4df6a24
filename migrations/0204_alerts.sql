-- +goose Up
-- +goose NO TRANSACTION
-- Alerts. open_key is 1 while the alert is open and NULL once resolved:
-- the unique key then allows at most one OPEN alert per (tenant, source,
-- rule) — two evaluators racing cannot fire twice — while resolved ones
-- (NULLs never collide) are kept as history.
CREATE TABLE IF NOT EXISTS alerts (
  tenant_id        CHAR(26)     CHARACTER SET ascii NOT NULL,
  id               CHAR(26)     CHARACTER SET ascii NOT NULL,
  source_id        CHAR(26)     CHARACTER SET ascii NOT NULL,
  rule             VARCHAR(32)  CHARACTER SET ascii NOT NULL,
  state            VARCHAR(16)  CHARACTER SET ascii NOT NULL,
  open_key         TINYINT      NULL,
  fired_at         DATETIME(6)  NOT NULL,
  clear_since      DATETIME(6)  NULL,
  resolved_at      DATETIME(6)  NULL,
  acknowledged_at  DATETIME(6)  NULL,
  acknowledged_by  VARCHAR(200) NULL,
  detail           JSON         NOT NULL,
  PRIMARY KEY (tenant_id, id),
  UNIQUE KEY uq_alerts_open (tenant_id, source_id, rule, open_key),
  KEY ix_alerts_state (tenant_id, state, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
