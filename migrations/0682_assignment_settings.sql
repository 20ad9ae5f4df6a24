-- +goose Up
-- +goose NO TRANSACTION
-- Per-tenant assignment settings: minutes from assignment to the
-- first-response due time. No row: the default (60).
CREATE TABLE IF NOT EXISTS assignment_settings (
  tenant_id              CHAR(26)    CHARACTER SET ascii NOT NULL,
  first_response_minutes INT         NOT NULL,
  updated_at             DATETIME(6) NOT NULL,
  PRIMARY KEY (tenant_id)
) ENGINE=InnoDB DEFAULT CHARSET=ascii;
