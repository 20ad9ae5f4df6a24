-- +goose Up
-- +goose NO TRANSACTION
-- Token scopes (space-separated, see internal/tenants/scopes.go) and an
-- optional expiry. The default gives every token made before scopes
-- existed, the provisioning token among them, full power (admin); 0502
-- drops it so new rows must name their scopes. One ALTER (atomic).
ALTER TABLE api_tokens
  ADD COLUMN scopes     VARCHAR(200) CHARACTER SET ascii NOT NULL DEFAULT 'admin',
  ADD COLUMN expires_at DATETIME(6)  NULL;
