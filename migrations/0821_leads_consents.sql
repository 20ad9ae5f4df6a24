-- +goose Up
-- +goose NO TRANSACTION
-- The consent records a person gave with a form (docs/FORMS.md,
-- "Consent"): a JSON array on the lead, so they leave with its export and
-- go with its erasure. NULL: none. One ALTER: atomic, re-runnable.
ALTER TABLE leads ADD COLUMN IF NOT EXISTS consents JSON NULL;

-- +goose Down
ALTER TABLE leads DROP COLUMN IF EXISTS consents;
