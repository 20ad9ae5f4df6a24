-- +goose Up
-- +goose NO TRANSACTION
-- Record order (PRODUCT.md §4): the order key of the record that last wrote
-- the lead's sender-owned fields. It sorts as text: 16 hex digits of the
-- record's time in microseconds since 1970 (the sender's event time, else
-- when Leadpipe received it), then Leadpipe's delivery id (a ULID, so
-- receipt order breaks ties). '' (rows from before) is older than any key.
ALTER TABLE leads
  ADD COLUMN order_key VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '';
