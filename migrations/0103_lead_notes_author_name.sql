-- +goose Up
-- +goose NO TRANSACTION
-- Notes by API tokens have no user id; keep who wrote them by name.
ALTER TABLE lead_notes ADD COLUMN author_name VARCHAR(255) NOT NULL DEFAULT '';
