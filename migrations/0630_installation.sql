-- +goose Up
-- +goose NO TRANSACTION
-- One row: this installation's id. Processes that share a database are one
-- installation; the id is what they write into Redis so that a second
-- installation on the same Redis database is refused at start
-- (internal/jobs/installation.go) instead of consuming this one's tasks.
CREATE TABLE IF NOT EXISTS installation (
  k          VARCHAR(8)  CHARACTER SET ascii NOT NULL,
  id         CHAR(26)    CHARACTER SET ascii NOT NULL,
  created_at DATETIME(6) NOT NULL,
  PRIMARY KEY (k)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
