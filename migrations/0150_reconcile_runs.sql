-- +goose Up
-- +goose NO TRANSACTION
-- One row per reconcile run. running_key is the source id while the run is
-- running and NULL afterwards: the unique key then allows one running run
-- per source (NULLs never collide), which makes "Reconcile now" idempotent.
-- window_start is set on scheduled runs only, so a schedule window runs at
-- most once however many schedulers enqueue it.
CREATE TABLE IF NOT EXISTS reconcile_runs (
  tenant_id     CHAR(26)      CHARACTER SET ascii NOT NULL,
  id            CHAR(26)      CHARACTER SET ascii NOT NULL,
  source_id     CHAR(26)      CHARACTER SET ascii NOT NULL,
  state         VARCHAR(16)   CHARACTER SET ascii NOT NULL,
  trigger_kind  VARCHAR(16)   CHARACTER SET ascii NOT NULL,
  window_start  DATETIME(6)   NULL,
  running_key   CHAR(26)      CHARACTER SET ascii NULL,
  since         DATETIME(6)   NULL,
  started_at    DATETIME(6)   NOT NULL,
  heartbeat_at  DATETIME(6)   NOT NULL,
  finished_at   DATETIME(6)   NULL,
  pages         INT           NOT NULL DEFAULT 0,
  records       INT           NOT NULL DEFAULT 0,
  new_count     INT           NOT NULL DEFAULT 0,
  known_count   INT           NOT NULL DEFAULT 0,
  changed_count INT           NOT NULL DEFAULT 0,
  errors        INT           NOT NULL DEFAULT 0,
  last_error    VARCHAR(1024) NULL,
  PRIMARY KEY (tenant_id, id),
  UNIQUE KEY uq_reconcile_runs_running (tenant_id, running_key),
  UNIQUE KEY uq_reconcile_runs_window (tenant_id, source_id, window_start),
  KEY ix_reconcile_runs_source (tenant_id, source_id, id),
  KEY ix_reconcile_runs_started (tenant_id, source_id, started_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
