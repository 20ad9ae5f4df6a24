-- +goose Up
-- +goose NO TRANSACTION
-- Routing beyond round robin (PRODUCT.md §5a): a rule's daily caps per
-- member (a JSON object user id → leads a day) and its escalation (after
-- escalate_after minutes overdue, to escalate_to: "next_member" or a user
-- id). One ALTER: atomic, re-runnable.
ALTER TABLE assignment_rules
  ADD COLUMN IF NOT EXISTS caps JSON NULL,
  ADD COLUMN IF NOT EXISTS escalate_after INT NULL,
  ADD COLUMN IF NOT EXISTS escalate_to CHAR(26) CHARACTER SET ascii NULL;
