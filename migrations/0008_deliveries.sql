-- +goose Up
-- +goose NO TRANSACTION
CREATE TABLE IF NOT EXISTS deliveries (
  tenant_id         CHAR(26)     CHARACTER SET ascii NOT NULL,
  source_id         CHAR(26)     CHARACTER SET ascii NOT NULL,
  id                CHAR(26)     CHARACTER SET ascii NOT NULL,
  delivery_id       VARCHAR(191) NOT NULL,
  origin            VARCHAR(16)  CHARACTER SET ascii NOT NULL DEFAULT 'webhook',
  payload           LONGBLOB     NOT NULL,
  received_at       DATETIME(6)  NOT NULL,
  processed_at      DATETIME(6)  NULL,
  lead_id           CHAR(26)     CHARACTER SET ascii NULL,
  attempts          INT          NOT NULL DEFAULT 0,
  last_error        VARCHAR(1024) NULL,
  PRIMARY KEY (tenant_id, id),
  UNIQUE KEY uq_deliveries_sender (tenant_id, source_id, delivery_id),
  KEY ix_deliveries_pending (tenant_id, processed_at, received_at),
  KEY ix_deliveries_source_time (tenant_id, source_id, received_at),
  KEY ix_deliveries_lead (tenant_id, lead_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
