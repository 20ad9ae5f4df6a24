-- +goose Up
-- +goose NO TRANSACTION
-- Refused rows of an import with the reason (GET /api/v1/imports/{id}/errors),
-- written in the transaction of their batch.
CREATE TABLE IF NOT EXISTS import_errors (
  tenant_id  CHAR(26)     CHARACTER SET ascii NOT NULL,
  import_id  CHAR(26)     CHARACTER SET ascii NOT NULL,
  row_num    INT          NOT NULL,
  reason     VARCHAR(500) NOT NULL,
  raw        MEDIUMTEXT   NOT NULL,
  PRIMARY KEY (tenant_id, import_id, row_num)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- +goose Down
DROP TABLE IF EXISTS import_errors;
