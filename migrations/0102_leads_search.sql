-- +goose Up
-- +goose NO TRANSACTION
-- Lead search (GET /api/v1/leads?q=, see internal/leads/search.go): prefix
-- matching on name, the name's last word, email, email domain and company,
-- each an index range that starts with tenant_id (an InnoDB FULLTEXT index
-- cannot). status comes second so a status filter narrows the range itself;
-- without one the search reads six ranges (status IN all). One ALTER: it is
-- atomic, so a failed run leaves nothing half-applied.
ALTER TABLE leads
  ADD COLUMN name_last VARCHAR(255) GENERATED ALWAYS AS (
    IF(LOCATE(' ', TRIM(name)) > 0, SUBSTRING_INDEX(TRIM(name), ' ', -1), '')) STORED,
  ADD COLUMN email_domain VARCHAR(320) GENERATED ALWAYS AS (
    IF(LOCATE('@', email) > 0, SUBSTRING_INDEX(email, '@', -1), '')) STORED,
  ADD KEY ix_leads_q_name (tenant_id, status, name),
  ADD KEY ix_leads_q_name_last (tenant_id, status, name_last),
  ADD KEY ix_leads_q_email (tenant_id, status, email),
  ADD KEY ix_leads_q_email_domain (tenant_id, status, email_domain),
  ADD KEY ix_leads_q_company (tenant_id, status, company);
