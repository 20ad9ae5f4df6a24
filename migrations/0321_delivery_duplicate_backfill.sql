-- +goose Up
-- +goose NO TRANSACTION
-- Fold the per-duplicate rows stored before 0320 into the counts.
-- Re-runnable: it sets the counts from the rows, it does not add to them.
-- Before 0320 times_seen counted deliveries only, so the folded
-- duplicates are not yet in it (dups_counted stays 0; the next duplicate
-- of the delivery, or its reprocessing, brings times_seen up).
UPDATE deliveries d
  JOIN (SELECT tenant_id, delivery_row_id, COUNT(*) AS n, MIN(received_at) AS first_at, MAX(received_at) AS last_at
        FROM delivery_duplicates GROUP BY tenant_id, delivery_row_id) x
    ON x.tenant_id = d.tenant_id AND x.delivery_row_id = d.id
  SET d.dup_count = x.n, d.dup_first_at = x.first_at, d.dup_last_at = x.last_at;
