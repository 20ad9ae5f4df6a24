-- +goose Up
-- +goose NO TRANSACTION
-- One round-robin position per rule, locked once per creating transaction
-- (a worker batch takes it once and hands positions out in order), so
-- concurrent batches share the turn fairly. Created with the rule, so the
-- lock never lands on a missing key (gap locks).
CREATE TABLE IF NOT EXISTS assignment_counters (
  tenant_id CHAR(26) CHARACTER SET ascii NOT NULL,
  rule_id   CHAR(26) CHARACTER SET ascii NOT NULL,
  next_pos  BIGINT   NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, rule_id)
) ENGINE=InnoDB DEFAULT CHARSET=ascii;
