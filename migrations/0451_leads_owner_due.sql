-- +goose Up
-- +goose NO TRANSACTION
-- "My follow-ups due": a person's leads with a due date before a time, an
-- index range that starts with tenant_id.
ALTER TABLE leads ADD KEY ix_leads_owner_due (tenant_id, owner_id, due_at);
