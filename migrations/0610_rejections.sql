-- +goose Up
-- +goose NO TRANSACTION
-- Rejected webhook requests kept for inspection: the newest 100 per source
-- for 7 days (internal/rejections trims on every flush). Holds no secret
-- and no signature in full, and no body: its size and SHA-256 only.
CREATE TABLE IF NOT EXISTS rejections (
  tenant_id    CHAR(26)     CHARACTER SET ascii NOT NULL,
  source_id    CHAR(26)     CHARACTER SET ascii NOT NULL,
  id           CHAR(26)     CHARACTER SET ascii NOT NULL,
  at           DATETIME(6)  NOT NULL,
  reason       VARCHAR(32)  CHARACTER SET ascii NOT NULL,
  skew_seconds BIGINT       NULL,
  ip           VARCHAR(64)  CHARACTER SET ascii NOT NULL DEFAULT '',
  headers      JSON         NOT NULL,
  size         BIGINT       NOT NULL,
  body_sha256  CHAR(64)     CHARACTER SET ascii NOT NULL,
  PRIMARY KEY (tenant_id, source_id, id),
  KEY ix_rejections_at (tenant_id, source_id, at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- +goose Down
DROP TABLE IF EXISTS rejections;
