-- +goose Up
-- +goose NO TRANSACTION
CREATE TABLE IF NOT EXISTS leads (
  tenant_id         CHAR(26)     CHARACTER SET ascii NOT NULL,
  id                CHAR(26)     CHARACTER SET ascii NOT NULL,
  source_id         CHAR(26)     CHARACTER SET ascii NOT NULL DEFAULT '',
  source_ref        VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  payload           JSON         NULL,
  email             VARCHAR(320) NOT NULL DEFAULT '',
  name              VARCHAR(255) NOT NULL DEFAULT '',
  phone             VARCHAR(64)  NOT NULL DEFAULT '',
  company           VARCHAR(255) NOT NULL DEFAULT '',
  source_created_at DATETIME(6)  NULL,
  last_seen_at      DATETIME(6)  NOT NULL,
  times_seen        INT          NOT NULL DEFAULT 1,
  status            VARCHAR(16)  CHARACTER SET ascii NOT NULL DEFAULT 'new',
  owner_id          CHAR(26)     CHARACTER SET ascii NULL,
  tags              JSON         NULL,
  version           INT          NOT NULL DEFAULT 1,
  created_at        DATETIME(6)  NOT NULL,
  updated_at        DATETIME(6)  NOT NULL,
  PRIMARY KEY (tenant_id, id),
  UNIQUE KEY uq_leads_source_ref (tenant_id, source_id, source_ref),
  KEY ix_leads_status (tenant_id, status, id),
  KEY ix_leads_owner (tenant_id, owner_id, id),
  KEY ix_leads_source (tenant_id, source_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
