-- +goose Up
-- +goose NO TRANSACTION
-- Round-robin positions a worker batch reserved (assignment_counters
-- advanced in a short transaction of its own) and has not yet used: the
-- batch deletes its row in its own transaction, so a committed batch
-- leaves none; a batch that rolled back or died leaves its row, and the
-- next batch of the rule hands those positions out first (locking the
-- row with SKIP LOCKED: a batch in flight holds its own). Owned by
-- internal/leads.
CREATE TABLE IF NOT EXISTS assignment_reservations (
  tenant_id  CHAR(26)    CHARACTER SET ascii NOT NULL,
  rule_id    CHAR(26)    CHARACTER SET ascii NOT NULL,
  id         CHAR(26)    CHARACTER SET ascii NOT NULL,
  start_pos  BIGINT      NOT NULL,
  n          BIGINT      NOT NULL,
  created_at DATETIME(6) NOT NULL,
  PRIMARY KEY (tenant_id, rule_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=ascii;
