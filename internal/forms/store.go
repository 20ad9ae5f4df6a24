package forms

import (
	"context"
	"encoding/json"
	"time"

	"leadpipe/internal/apperr"
	"leadpipe/internal/db"
)

// The SQL on the forms table. Every statement filters by tenant_id.

type formRow struct {
	TenantID   string    `db:"tenant_id"`
	ID         string    `db:"id"`
	Slug       string    `db:"slug"`
	Name       string    `db:"name"`
	SourceID   string    `db:"source_id"`
	Definition []byte    `db:"definition"`
	SecretEnc  []byte    `db:"captcha_secret_enc"`
	CreatedAt  time.Time `db:"created_at"`
	UpdatedAt  time.Time `db:"updated_at"`
}

const formCols = `tenant_id, id, slug, name, source_id, definition, captcha_secret_enc, created_at, updated_at`

func (r formRow) form() Form {
	var d definition
	_ = json.Unmarshal(r.Definition, &d)
	f := Form{TenantID: r.TenantID, ID: r.ID, Slug: r.Slug, Name: r.Name, SourceID: r.SourceID, Fields: d.Fields,
		Consent: d.Consent, Success: d.Success, AllowedOrigins: d.AllowedOrigins, Captcha: d.Captcha, Limits: d.Limits,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if f.AllowedOrigins == nil {
		f.AllowedOrigins = []string{}
	}
	if f.Captcha != nil {
		f.Captcha.HasSecret = len(r.SecretEnc) > 0
	}
	return f
}

func definitionOf(f Form) string {
	d := definition{Fields: f.Fields, Consent: f.Consent, Success: f.Success, AllowedOrigins: f.AllowedOrigins, Limits: f.Limits}
	if f.Captcha != nil {
		c := *f.Captcha
		c.Secret, c.HasSecret = "", false
		d.Captcha = &c
	}
	b, _ := json.Marshal(d)
	return string(b)
}

func insertForm(ctx context.Context, x db.Ext, f Form, secretEnc []byte) error {
	_, err := x.ExecContext(ctx, `INSERT INTO forms (`+formCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		f.TenantID, f.ID, f.Slug, f.Name, f.SourceID, definitionOf(f), secretEnc, f.CreatedAt, f.UpdatedAt)
	return db.MapErr(err, "", "a form with this slug already exists")
}

func updateForm(ctx context.Context, x db.Ext, f Form, secretEnc []byte) error {
	_, err := x.ExecContext(ctx, `UPDATE forms SET name = ?, definition = ?, captcha_secret_enc = ?, updated_at = ?
		WHERE tenant_id = ? AND id = ?`, f.Name, definitionOf(f), secretEnc, f.UpdatedAt, f.TenantID, f.ID)
	return err
}

func deleteForm(ctx context.Context, x db.Ext, tenantID, id string) (bool, error) {
	res, err := x.ExecContext(ctx, `DELETE FROM forms WHERE tenant_id = ? AND id = ?`, tenantID, id)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

func getForm(ctx context.Context, x db.Ext, tenantID, id string, lock bool) (formRow, error) {
	var r formRow
	q := `SELECT ` + formCols + ` FROM forms WHERE tenant_id = ? AND id = ?`
	if lock {
		q += ` FOR UPDATE`
	}
	err := x.GetContext(ctx, &r, q, tenantID, id)
	return r, db.MapErr(err, "form not found", "")
}

func getFormBySlug(ctx context.Context, x db.Ext, tenantID, slug string) (formRow, error) {
	var r formRow
	err := x.GetContext(ctx, &r, `SELECT `+formCols+` FROM forms WHERE tenant_id = ? AND slug = ?`, tenantID, slug)
	if err != nil {
		return r, db.MapErr(err, "form not found", "")
	}
	return r, nil
}

func listForms(ctx context.Context, x db.Ext, tenantID string) ([]formRow, error) {
	var rs []formRow
	err := x.SelectContext(ctx, &rs, `SELECT `+formCols+` FROM forms WHERE tenant_id = ? ORDER BY name, id`, tenantID)
	return rs, err
}

var errNotFound = apperr.New(apperr.NotFound, "form not found")
