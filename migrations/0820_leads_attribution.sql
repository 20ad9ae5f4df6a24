-- +goose Up
-- +goose NO TRANSACTION
-- Where a lead came from (docs/FORMS.md, "Attribution"): {"first":{…},
-- "last":{…}}, the first touch set once, the last one following the
-- newest record. NULL: nothing known. One ALTER: atomic, re-runnable.
ALTER TABLE leads ADD COLUMN IF NOT EXISTS attribution JSON NULL;

-- +goose Down
ALTER TABLE leads DROP COLUMN IF EXISTS attribution;
