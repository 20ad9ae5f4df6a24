-- +goose Up
-- +goose NO TRANSACTION
-- The "Sources and campaigns" report per campaign (docs/MONITORING.md):
-- report_campaign is the campaign of the lead's first touch (utm_campaign,
-- else the ad's campaign name, else its id; '' when none), cut to 191
-- characters to fit an index and compared byte for byte ("Spring" and
-- "spring" are two campaigns, as the ad platforms count them). STORED so
-- the report reads it from ix_leads_report, never the JSON (a VIRTUAL
-- column was 5x slower at 1M leads, docs/BENCHMARKS.md). ix_leads_report
-- is rebuilt with it under the same name: one index serves both
-- groupings and writes to leads keep the cost they had. One ALTER: atomic
-- (a failed run leaves nothing half-applied) and re-runnable. It copies
-- the table, which on Galera holds writes cluster-wide while it runs
-- (docs/OPERATING.md, Migrations).
ALTER TABLE leads
  ADD COLUMN IF NOT EXISTS report_campaign VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin GENERATED ALWAYS AS (LEFT(COALESCE(
    NULLIF(JSON_VALUE(attribution, '$.first.utm_campaign'), ''),
    NULLIF(JSON_VALUE(attribution, '$.first.campaign_name'), ''),
    NULLIF(JSON_VALUE(attribution, '$.first.campaign_id'), ''), ''), 191)) STORED,
  DROP KEY IF EXISTS ix_leads_report,
  ADD KEY ix_leads_report (tenant_id, created_at, source_id, report_campaign, status, assigned_at, first_responded_at);
