-- +goose Up
-- +goose NO TRANSACTION
-- The uploaded file of an import, stored before any row is applied so a
-- run can resume from the database alone (no local disk): 1 MiB pieces,
-- below MariaDB's and MySQL's default max_allowed_packet.
CREATE TABLE IF NOT EXISTS import_chunks (
  tenant_id  CHAR(26)   CHARACTER SET ascii NOT NULL,
  import_id  CHAR(26)   CHARACTER SET ascii NOT NULL,
  seq        INT        NOT NULL,
  data       MEDIUMBLOB NOT NULL,
  PRIMARY KEY (tenant_id, import_id, seq)
) ENGINE=InnoDB;

-- +goose Down
DROP TABLE IF EXISTS import_chunks;
