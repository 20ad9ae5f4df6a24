-- +goose Up
-- +goose NO TRANSACTION
-- One row per lead merged into a survivor (PRODUCT.md §5b): what an
-- unmerge needs to restore. The merged lead's own row, notes, timeline and
-- deliveries are never moved (they are read together with the survivor's),
-- so "state" holds only what the merge overwrote: the merged lead's status,
-- and the survivor's fields before the merge with the values it took.
CREATE TABLE IF NOT EXISTS lead_merges (
  tenant_id   CHAR(26)    CHARACTER SET ascii NOT NULL,
  id          CHAR(26)    CHARACTER SET ascii NOT NULL,
  survivor_id CHAR(26)    CHARACTER SET ascii NOT NULL,
  merged_id   CHAR(26)    CHARACTER SET ascii NOT NULL,
  state       JSON        NOT NULL,
  actor_name  VARCHAR(255) NOT NULL DEFAULT '',
  merged_at   DATETIME(6) NOT NULL,
  undone_at   DATETIME(6) NULL,
  PRIMARY KEY (tenant_id, id),
  KEY ix_lead_merges_merged (tenant_id, merged_id, id),
  KEY ix_lead_merges_survivor (tenant_id, survivor_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
