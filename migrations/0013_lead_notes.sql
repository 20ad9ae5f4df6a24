-- +goose Up
-- +goose NO TRANSACTION
CREATE TABLE IF NOT EXISTS lead_notes (
  tenant_id  CHAR(26)    CHARACTER SET ascii NOT NULL,
  lead_id    CHAR(26)    CHARACTER SET ascii NOT NULL,
  id         CHAR(26)    CHARACTER SET ascii NOT NULL,
  author_id  CHAR(26)    CHARACTER SET ascii NULL,
  body       TEXT        NOT NULL,
  created_at DATETIME(6) NOT NULL,
  PRIMARY KEY (tenant_id, lead_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
