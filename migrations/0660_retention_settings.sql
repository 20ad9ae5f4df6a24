-- +goose Up
-- +goose NO TRANSACTION
-- Per-tenant retention (PRODUCT.md §5c): how many days processed
-- deliveries keep their raw payload, dead letters and outbound events are
-- kept. A tenant without a row has the defaults (internal/retention).
CREATE TABLE IF NOT EXISTS retention_settings (
  tenant_id              CHAR(26)    CHARACTER SET ascii NOT NULL,
  delivery_payload_days  INT         NOT NULL,
  dead_letter_days       INT         NOT NULL,
  event_days             INT         NOT NULL,
  updated_at             DATETIME(6) NOT NULL,
  PRIMARY KEY (tenant_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
