-- +goose Up
-- +goose NO TRANSACTION
-- Replaced by deliveries.dup_count/dup_first_at/dup_last_at (0320, 0321).
DROP TABLE IF EXISTS delivery_duplicates;
