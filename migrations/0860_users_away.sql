-- +goose Up
-- +goose NO TRANSACTION
-- "Away until" a time (PRODUCT.md §5a): round robin skips the user while
-- away_until is in the future. NULL: not away. Set by the user on their
-- settings page or by an admin (PUT /api/v1/users/{id}/away).
ALTER TABLE users ADD COLUMN IF NOT EXISTS away_until DATETIME(6) NULL;
