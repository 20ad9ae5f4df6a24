-- +goose Up
-- +goose NO TRANSACTION
CREATE TABLE IF NOT EXISTS dead_letters (
  tenant_id   CHAR(26)     CHARACTER SET ascii NOT NULL,
  source_id   CHAR(26)     CHARACTER SET ascii NOT NULL,
  id          CHAR(26)     CHARACTER SET ascii NOT NULL,
  reason      VARCHAR(1024) NOT NULL,
  headers     JSON         NULL,
  body        LONGBLOB     NOT NULL,
  received_at DATETIME(6)  NOT NULL,
  PRIMARY KEY (tenant_id, id),
  KEY ix_dead_letters_source (tenant_id, source_id, received_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
