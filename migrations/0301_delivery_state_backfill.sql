-- +goose Up
-- +goose NO TRANSACTION
-- Rows stored before 0300: processed_at with an error was a permanent
-- failure, processed_at alone a success. Re-runnable (idempotent).
UPDATE deliveries SET state = CASE
    WHEN processed_at IS NOT NULL AND last_error IS NOT NULL THEN 'failed'
    WHEN processed_at IS NOT NULL THEN 'processed'
    ELSE 'received' END
  WHERE state = 'received' AND processed_at IS NOT NULL;
