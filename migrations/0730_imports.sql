-- +goose Up
-- +goose NO TRANSACTION
-- CSV imports (PRODUCT.md §5b, internal/imports): one row per accepted
-- upload. offset_rows is the number of data rows applied so far; it is
-- written in the transaction of each batch, so a crashed run resumes
-- after the last committed batch and applies nothing twice.
CREATE TABLE IF NOT EXISTS imports (
  tenant_id       CHAR(26)     CHARACTER SET ascii NOT NULL,
  id              CHAR(26)     CHARACTER SET ascii NOT NULL,
  source_id       CHAR(26)     CHARACTER SET ascii NOT NULL,
  state           VARCHAR(16)  CHARACTER SET ascii NOT NULL,
  filename        VARCHAR(255) NOT NULL DEFAULT '',
  natural_key     VARCHAR(191) NOT NULL,
  mapping         JSON         NOT NULL,
  size_bytes      BIGINT       NOT NULL,
  chunks          INT          NOT NULL,
  body_sha256     CHAR(64)     CHARACTER SET ascii NOT NULL,
  total_rows      INT          NOT NULL,
  offset_rows     INT          NOT NULL DEFAULT 0,
  new_rows        INT          NOT NULL DEFAULT 0,
  updated_rows    INT          NOT NULL DEFAULT 0,
  unchanged_rows  INT          NOT NULL DEFAULT 0,
  error_rows      INT          NOT NULL DEFAULT 0,
  last_error      TEXT         NULL,
  created_by      VARCHAR(255) NOT NULL DEFAULT '',
  created_at      DATETIME(6)  NOT NULL,
  updated_at      DATETIME(6)  NOT NULL,
  finished_at     DATETIME(6)  NULL,
  PRIMARY KEY (tenant_id, id),
  KEY ix_imports_state (tenant_id, state, updated_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- +goose Down
DROP TABLE IF EXISTS imports;
