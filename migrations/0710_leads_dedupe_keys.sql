-- +goose Up
-- +goose NO TRANSACTION
-- Possible duplicates and merges (PRODUCT.md §5b): each lead keeps its
-- email and phone normalized (internal/leads/normalize.go: email trimmed and
-- lower-cased, phone as E.164 digits), written by every insert and sender
-- upsert, so "other leads of the tenant with the same email or phone" is one
-- index range each. merged_into points a merged lead at its survivor (a
-- merged lead also has status 'merged', which keeps it out of every list's
-- status ranges). One ALTER: atomic, re-runnable.
ALTER TABLE leads
  ADD COLUMN IF NOT EXISTS email_norm VARCHAR(320) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  ADD COLUMN IF NOT EXISTS phone_norm VARCHAR(20) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
  ADD COLUMN IF NOT EXISTS merged_into CHAR(26) CHARACTER SET ascii NULL,
  ADD KEY IF NOT EXISTS ix_leads_email_norm (tenant_id, email_norm),
  ADD KEY IF NOT EXISTS ix_leads_phone_norm (tenant_id, phone_norm),
  ADD KEY IF NOT EXISTS ix_leads_merged_into (tenant_id, merged_into);
