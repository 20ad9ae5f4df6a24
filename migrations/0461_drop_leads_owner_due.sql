-- +goose Up
-- +goose NO TRANSACTION
-- ix_leads_owner_status_due (0460) serves "My follow-ups due"; MariaDB
-- never chose this one for it (the status condition needs the row).
ALTER TABLE leads DROP KEY ix_leads_owner_due;
