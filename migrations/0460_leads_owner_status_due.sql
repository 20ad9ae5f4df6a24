-- +goose Up
-- +goose NO TRANSACTION
-- "My follow-ups due": a person's leads of one status with a due date
-- before a time, in due-date order, read from the index alone (the list
-- walks one range per open status; each status tab counts one range).
ALTER TABLE leads ADD KEY ix_leads_owner_status_due (tenant_id, owner_id, status, due_at);
