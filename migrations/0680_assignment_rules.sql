-- +goose Up
-- +goose NO TRANSACTION
-- Assignment rules (PRODUCT.md §5a), in the order they are tried
-- (position). A rule matches a new lead by source and/or by one field's
-- value, and assigns it round robin among members (a JSON array of user
-- ids) or to a fixed owner. Owned by internal/leads.
CREATE TABLE IF NOT EXISTS assignment_rules (
  tenant_id  CHAR(26)     CHARACTER SET ascii NOT NULL,
  id         CHAR(26)     CHARACTER SET ascii NOT NULL,
  position   INT          NOT NULL,
  name       VARCHAR(200) NOT NULL,
  source_id  CHAR(26)     CHARACTER SET ascii NULL,
  field      VARCHAR(100) NULL,
  equals     VARCHAR(500) NULL,
  strategy   VARCHAR(16)  CHARACTER SET ascii NOT NULL,
  members    JSON         NULL,
  owner_id   CHAR(26)     CHARACTER SET ascii NULL,
  created_at DATETIME(6)  NOT NULL,
  PRIMARY KEY (tenant_id, id),
  KEY ix_assignment_rules_position (tenant_id, position)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
