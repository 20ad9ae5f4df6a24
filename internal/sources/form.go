package sources

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"leadpipe/internal/apperr"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
)

// KindForm is the kind of a web form's own source (internal/forms): its
// deliveries are the form's submissions. It is made by the forms API in
// the transaction that stores the form, never by the sources API, and
// its secret signs the form's submission tokens.
const KindForm = "form"

// FormSourceSlug is the source slug of the form with this slug.
func FormSourceSlug(formSlug string) string { return "form-" + formSlug }

// CreateFormSourceTx adds a form's source (kind form, slug
// FormSourceSlug) with a fresh secret in the caller's transaction; a taken
// slug is a Conflict.
func (s *Service) CreateFormSourceTx(ctx context.Context, x db.Ext, tenantID, formSlug, name string) (Source, error) {
	now := s.now()
	src := Source{TenantID: tenantID, ID: ids.New(), Slug: FormSourceSlug(formSlug), Name: name, Kind: KindForm,
		ReconcileIntervalS: 900, ReconcileLookbackS: 3600, CreatedAt: now, UpdatedAt: now}
	if err := insertSource(ctx, x, src); err != nil {
		return Source{}, err
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	secret := hex.EncodeToString(b[:])
	if err := insertSecret(ctx, x, tenantID, src.ID, ids.New(), s.Box.Seal([]byte(secret), aad(tenantID, src.ID, "secret")), now); err != nil {
		return Source{}, err
	}
	s.invalidate()
	return src, nil
}

// RenameFormSourceTx keeps a form's source named as the form.
func (s *Service) RenameFormSourceTx(ctx context.Context, x db.Ext, tenantID, sourceID, name string) error {
	_, err := x.ExecContext(ctx, `UPDATE sources SET name = ?, updated_at = ? WHERE tenant_id = ? AND id = ? AND kind = ?`,
		name, s.now(), tenantID, sourceID, KindForm)
	return err
}

// FormSourceTx returns the form source with the form slug's source slug,
// NotFound when there is none (a deleted form leaves its source, with its
// deliveries and leads: a new form of the same slug takes it up again).
func (s *Service) FormSourceTx(ctx context.Context, x db.Ext, tenantID, formSlug string) (Source, error) {
	src, err := getSourceBySlug(ctx, x, tenantID, FormSourceSlug(formSlug))
	if err == nil && src.Kind != KindForm {
		return Source{}, apperr.New(apperr.Conflict, "a source named %s already exists", FormSourceSlug(formSlug))
	}
	return src, err
}
