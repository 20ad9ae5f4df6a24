-- +goose Up
-- +goose NO TRANSACTION
-- Whom a rule gave a new lead and which rule: the lead's "assigned"
-- timeline entry (docs/ARCHITECTURE.md, "Assignment and first response"),
-- kept on the lead's own row, written by the INSERT that creates it,
-- instead of a lead_events row per new lead (docs/BENCHMARKS.md,
-- "Assignment in the drain, 2026-12-04 afternoon"). The rule's name as it
-- was: rules are replaced with fresh ids. One ALTER: atomic, re-runnable.
ALTER TABLE leads
  ADD COLUMN IF NOT EXISTS assigned_owner_id CHAR(26) CHARACTER SET ascii NULL,
  ADD COLUMN IF NOT EXISTS assigned_rule_id CHAR(26) CHARACTER SET ascii NULL,
  ADD COLUMN IF NOT EXISTS assigned_rule_name VARCHAR(200) NULL;

-- The entries written as lead_events rows so far move to their leads
-- (re-runnable: a lead that has the columns keeps them; the rows go after).
UPDATE leads l JOIN lead_events e ON e.tenant_id = l.tenant_id AND e.lead_id = l.id AND e.kind = 'assigned'
  SET l.assigned_owner_id = JSON_VALUE(e.detail, '$.owner_id'),
      l.assigned_rule_id = JSON_VALUE(e.detail, '$.rule_id'),
      l.assigned_rule_name = JSON_VALUE(e.detail, '$.rule_name')
  WHERE l.assigned_rule_id IS NULL;
DELETE FROM lead_events WHERE kind = 'assigned';
