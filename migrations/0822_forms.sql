-- +goose Up
-- +goose NO TRANSACTION
-- A tenant's hosted web forms (docs/FORMS.md). Each is the configuration
-- of one source of kind `form` (source_id), whose deliveries are the
-- submissions. definition holds the fields, consent, success, allowed
-- origins, limits and the captcha's site key; the captcha's secret is
-- sealed (internal/atrest) in captcha_secret_enc.
CREATE TABLE IF NOT EXISTS forms (
  tenant_id          CHAR(26)     CHARACTER SET ascii NOT NULL,
  id                 CHAR(26)     CHARACTER SET ascii NOT NULL,
  slug               VARCHAR(63)  CHARACTER SET ascii NOT NULL,
  name               VARCHAR(200) NOT NULL,
  source_id          CHAR(26)     CHARACTER SET ascii NOT NULL,
  definition         JSON         NOT NULL,
  captcha_secret_enc VARBINARY(1024) NULL,
  created_at         DATETIME(6)  NOT NULL,
  updated_at         DATETIME(6)  NOT NULL,
  PRIMARY KEY (tenant_id, id),
  UNIQUE KEY forms_slug (tenant_id, slug)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- +goose Down
DROP TABLE IF EXISTS forms;
