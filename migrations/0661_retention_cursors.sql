-- +goose Up
-- +goose NO TRANSACTION
-- Where the retention purge stopped, per tenant and purged table: the last
-- primary key (a ULID) it walked past. The purge resumes after it, so a
-- stopped run (deploy, crash, cancelled context) does not start over.
CREATE TABLE IF NOT EXISTS retention_cursors (
  tenant_id   CHAR(26)    CHARACTER SET ascii NOT NULL,
  tbl         VARCHAR(32) CHARACTER SET ascii NOT NULL,
  after_id    CHAR(26)    CHARACTER SET ascii NOT NULL,
  updated_at  DATETIME(6) NOT NULL,
  PRIMARY KEY (tenant_id, tbl)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
