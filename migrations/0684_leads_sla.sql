-- +goose Up
-- +goose NO TRANSACTION
-- sla=overdue|due_soon: the unanswered leads (first_responded_at IS NULL)
-- of a tenant in due order, one range of this index.
ALTER TABLE leads ADD KEY IF NOT EXISTS ix_leads_sla (tenant_id, first_responded_at, first_response_due_at);
