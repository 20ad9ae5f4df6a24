-- +goose Up
-- +goose NO TRANSACTION
-- Room a delivery row keeps for what is written into it later. A claim
-- stores a row with processed_at, lead_id, outcome, dup_first_at and
-- dup_last_at NULL (no bytes) and state 'received'; processing makes it
-- 45 bytes longer and the first duplicate 16. InnoDB updates a record in
-- place only when no field changes size, and a longer record in a full
-- page (rows arrive in id order, so leaf pages fill up) makes it
-- reorganise or split the page: measured 3,774–4,455 bytes of redo per
-- processed delivery, more than the claim and the lead with its twelve
-- index entries together (about 600 + 860). Every row is stored with these
-- 64 bytes (the DEFAULT, so no insert names the column); the statements
-- that make it longer give up as many in the same UPDATE
-- (internal/webhooks/process.go), so the record reuses its own space:
-- 634–684 bytes of redo measured.
ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS spare VARBINARY(64) NULL
    DEFAULT '................................................................';
