-- +goose Up
-- +goose NO TRANSACTION
-- New tokens name their scopes explicitly: without a default an insert
-- that forgets them fails instead of minting an admin token.
ALTER TABLE api_tokens ALTER COLUMN scopes DROP DEFAULT;
