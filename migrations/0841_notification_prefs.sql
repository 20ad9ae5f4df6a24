-- +goose Up
-- +goose NO TRANSACTION
-- A user's notification preferences (docs/NOTIFICATIONS.md): the kinds
-- turned off (a JSON array) and quiet hours in minutes of the user's own
-- day (from = to: none). No row: everything on, no quiet hours.
CREATE TABLE IF NOT EXISTS notification_prefs (
  tenant_id   CHAR(26)  CHARACTER SET ascii NOT NULL,
  user_id     CHAR(26)  CHARACTER SET ascii NOT NULL,
  kinds_off   JSON      NOT NULL,
  quiet_from  SMALLINT  NOT NULL DEFAULT 0,
  quiet_to    SMALLINT  NOT NULL DEFAULT 0,
  updated_at  DATETIME(6) NOT NULL,
  PRIMARY KEY (tenant_id, user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
