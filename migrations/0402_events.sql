-- +goose Up
-- +goose NO TRANSACTION
-- Events and the transactional outbox in one table: a row is written in the
-- transaction of the change that causes it with pending = 1; the relay
-- claims pending rows (claimed_by, a conditional UPDATE … LIMIT n), fans
-- them out to event_deliveries and sets pending to NULL. body is the exact
-- envelope that is signed and sent.
CREATE TABLE IF NOT EXISTS events (
  tenant_id    CHAR(26)     CHARACTER SET ascii NOT NULL,
  id           CHAR(26)     CHARACTER SET ascii NOT NULL,
  type         VARCHAR(64)  CHARACTER SET ascii NOT NULL,
  resource_id  CHAR(26)     CHARACTER SET ascii NOT NULL,
  sequence     BIGINT       NOT NULL,
  body         MEDIUMBLOB   NOT NULL,
  created_at   DATETIME(6)  NOT NULL,
  pending      TINYINT      NULL,
  claimed_by   CHAR(26)     CHARACTER SET ascii NULL,
  claimed_at   DATETIME(6)  NULL,
  relayed_at   DATETIME(6)  NULL,
  PRIMARY KEY (tenant_id, id),
  KEY ix_events_pending (tenant_id, pending, claimed_at),
  KEY ix_events_created (tenant_id, created_at, id),
  KEY ix_events_resource (tenant_id, resource_id, sequence)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
