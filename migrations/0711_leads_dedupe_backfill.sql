-- +goose Up
-- +goose NO TRANSACTION
-- Fills email_norm and phone_norm of leads stored before 0710 the way
-- internal/leads/normalize.go does: email trimmed and lower-cased; phone
-- digits only, '+' in front when it was written international ('+' or a
-- leading 00, which is dropped), '' unless 7 to 15 digits remain.
-- Re-runnable: it rewrites the same values.
UPDATE leads SET
  email_norm = LOWER(TRIM(email)),
  phone_norm = CASE
    WHEN TRIM(phone) LIKE '00%' THEN
      IF(CHAR_LENGTH(REGEXP_REPLACE(phone, '[^0-9]', '')) - 2 BETWEEN 7 AND 15,
         CONCAT('+', SUBSTRING(REGEXP_REPLACE(phone, '[^0-9]', ''), 3)), '')
    WHEN CHAR_LENGTH(REGEXP_REPLACE(phone, '[^0-9]', '')) BETWEEN 7 AND 15 THEN
      CONCAT(IF(TRIM(phone) LIKE '+%', '+', ''), REGEXP_REPLACE(phone, '[^0-9]', ''))
    ELSE '' END
  WHERE email <> '' OR phone <> '';
