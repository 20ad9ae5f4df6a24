-- +goose Up
-- +goose NO TRANSACTION
-- One-time links of invitations and password resets (docs/NOTIFICATIONS.md,
-- "Invitations and password reset"). Only a SHA-256 of the link's secret is
-- kept; the secret is derived from LEADPIPE_SECRET_KEY and the row's id, so
-- the outbox can put the link in the message at send time without storing
-- it. A link is live while used_at and withdrawn_at are NULL and expires_at
-- is ahead; using it is one conditional UPDATE, so of two concurrent uses
-- exactly one wins.
CREATE TABLE IF NOT EXISTS user_links (
  tenant_id    CHAR(26)    CHARACTER SET ascii NOT NULL,
  id           CHAR(26)    CHARACTER SET ascii NOT NULL,
  user_id      CHAR(26)    CHARACTER SET ascii NOT NULL,
  kind         VARCHAR(16) CHARACTER SET ascii NOT NULL,
  token_hash   BINARY(32)  NOT NULL,
  created_by   CHAR(26)    CHARACTER SET ascii NULL,
  created_at   DATETIME(6) NOT NULL,
  expires_at   DATETIME(6) NOT NULL,
  used_at      DATETIME(6) NULL,
  withdrawn_at DATETIME(6) NULL,
  PRIMARY KEY (tenant_id, id),
  KEY ix_user_links_user (tenant_id, user_id, kind)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
