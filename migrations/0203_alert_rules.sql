-- +goose Up
-- +goose NO TRANSACTION
-- Per-source alert rule settings; a source without a row uses the defaults
-- in internal/monitor/rules.go.
CREATE TABLE IF NOT EXISTS alert_rules (
  tenant_id             CHAR(26)    CHARACTER SET ascii NOT NULL,
  source_id             CHAR(26)    CHARACTER SET ascii NOT NULL,
  window_s              INT         NOT NULL,
  baseline_s            INT         NOT NULL,
  spike_enabled         BOOLEAN     NOT NULL,
  spike_factor          DOUBLE      NOT NULL,
  spike_min_points      DOUBLE      NOT NULL,
  spike_min_deliveries  INT         NOT NULL,
  rejections_enabled    BOOLEAN     NOT NULL,
  rejections_min        INT         NOT NULL,
  rejections_factor     DOUBLE      NOT NULL,
  dead_letters_enabled  BOOLEAN     NOT NULL,
  dead_letters_min      INT         NOT NULL,
  loss_enabled          BOOLEAN     NOT NULL,
  loss_min              INT         NOT NULL,
  updated_at            DATETIME(6) NOT NULL,
  updated_by            VARCHAR(200) NULL,
  PRIMARY KEY (tenant_id, source_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
