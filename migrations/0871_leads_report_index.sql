-- +goose Up
-- +goose NO TRANSACTION
-- The "Sources and campaigns" report reads one range of this index per
-- period (leads.Service.SourceReport): it covers every column the report
-- needs, so the leads' rows are never read. Re-runnable.
ALTER TABLE leads ADD KEY IF NOT EXISTS ix_leads_report (tenant_id, created_at, source_id, status, assigned_at, first_responded_at);
