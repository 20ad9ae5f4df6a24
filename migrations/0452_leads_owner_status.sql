-- +goose Up
-- +goose NO TRANSACTION
-- "My open leads" (the staff inbox's default view) and its status counts:
-- one person's leads per status, newest first.
ALTER TABLE leads ADD KEY ix_leads_owner_status (tenant_id, owner_id, status, id);
