-- +goose Up
-- +goose NO TRANSACTION
CREATE TABLE IF NOT EXISTS sources (
  tenant_id             CHAR(26)     CHARACTER SET ascii NOT NULL,
  id                    CHAR(26)     CHARACTER SET ascii NOT NULL,
  slug                  VARCHAR(63)  CHARACTER SET ascii NOT NULL,
  name                  VARCHAR(200) NOT NULL,
  kind                  VARCHAR(32)  CHARACTER SET ascii NOT NULL,
  config                JSON         NULL,
  verify_token_enc      VARBINARY(512) NULL,
  reconcile_base_url    VARCHAR(2048) NULL,
  reconcile_token_enc   VARBINARY(4096) NULL,
  reconcile_form_id     VARCHAR(255) NULL,
  reconcile_list_path   VARCHAR(1024) NULL,
  reconcile_interval_s  INT          NOT NULL DEFAULT 900,
  reconcile_lookback_s  INT          NOT NULL DEFAULT 3600,
  reconcile_cursor      DATETIME(6)  NULL,
  created_at            DATETIME(6)  NOT NULL,
  updated_at            DATETIME(6)  NOT NULL,
  PRIMARY KEY (tenant_id, id),
  UNIQUE KEY uq_sources_slug (tenant_id, slug)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
