-- +goose Up
-- +goose NO TRANSACTION
-- Outbound webhook endpoints (PRODUCT.md §9). failing_since is the time of
-- the first failed attempt after the last success (NULL while healthy): an
-- endpoint failing for 5 days is disabled (disabled_reason says why).
CREATE TABLE IF NOT EXISTS event_endpoints (
  tenant_id        CHAR(26)      CHARACTER SET ascii NOT NULL,
  id               CHAR(26)      CHARACTER SET ascii NOT NULL,
  url              VARCHAR(2048) NOT NULL,
  description      VARCHAR(500)  NOT NULL DEFAULT '',
  events           JSON          NOT NULL,
  enabled          TINYINT       NOT NULL DEFAULT 1,
  disabled_reason  VARCHAR(500)  NULL,
  disabled_at      DATETIME(6)   NULL,
  failing_since    DATETIME(6)   NULL,
  last_success_at  DATETIME(6)   NULL,
  last_failure_at  DATETIME(6)   NULL,
  last_error       VARCHAR(1000) NULL,
  created_at       DATETIME(6)   NOT NULL,
  updated_at       DATETIME(6)   NOT NULL,
  PRIMARY KEY (tenant_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
