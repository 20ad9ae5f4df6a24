-- +goose Up
-- +goose NO TRANSACTION
-- Tenant-wide alert rules (not about one source): today the sla_breach
-- rule (PRODUCT.md §5a). A tenant without a row uses the defaults in
-- internal/monitor/sla.go.
CREATE TABLE IF NOT EXISTS alert_tenant_rules (
  tenant_id        CHAR(26)     CHARACTER SET ascii NOT NULL,
  sla_enabled      BOOLEAN      NOT NULL,
  sla_min_overdue  INT          NOT NULL,
  sla_for_s        INT          NOT NULL,
  updated_at       DATETIME(6)  NOT NULL,
  updated_by       VARCHAR(200) NULL,
  PRIMARY KEY (tenant_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
