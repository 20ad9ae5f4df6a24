-- +goose Up
-- +goose NO TRANSACTION
-- The W3C traceparent of the span that emitted an event (tracing on only;
-- internal/tracing): its outbound attempts join that trace and send it as
-- `traceparent`. NULL when tracing is off: no byte stored.
ALTER TABLE events ADD COLUMN IF NOT EXISTS traceparent VARCHAR(55) CHARACTER SET ascii NULL;
