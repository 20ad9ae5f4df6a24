-- +goose Up
-- +goose NO TRANSACTION
-- One person (one email) may be a user of several tenants: the login
-- lookup is keyed by (email, tenant_id), one row per membership, instead
-- of one tenant per email. One ALTER (atomic).
ALTER TABLE user_logins DROP PRIMARY KEY, ADD PRIMARY KEY (email, tenant_id);
