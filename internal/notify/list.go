package notify

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"leadpipe/internal/apperr"
	"leadpipe/internal/db"
)

// Item is one notification as the admins' mail page shows it.
type Item struct {
	ID        string     `db:"id"`
	Kind      string     `db:"kind"`
	UserID    string     `db:"user_id"`
	State     string     `db:"state"`
	Attempts  int        `db:"attempts"`
	CreatedAt time.Time  `db:"created_at"`
	NextAt    time.Time  `db:"next_at"`
	DoneAt    *time.Time `db:"done_at"`
	LastError *string    `db:"last_error"`
	To        *string    `db:"to_addr"`
	Subject   *string    `db:"subject"`
	Text      *string    `db:"body_text"`
	HTML      *string    `db:"body_html"`
	Data      string     `db:"data"`
}

// ListLimit bounds List.
const ListLimit = 100

// List returns the tenant's newest notifications (only failed ones with
// failedOnly), without their bodies.
func List(ctx context.Context, x db.Ext, tenantID string, failedOnly bool) ([]Item, error) {
	q := `SELECT id, kind, user_id, state, attempts, created_at, next_at, done_at, last_error, to_addr, subject
		FROM notifications WHERE tenant_id = ?`
	args := []any{tenantID}
	if failedOnly {
		q += ` AND state = 'failed'`
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, ListLimit)
	var out []Item
	err := x.SelectContext(ctx, &out, q, args...)
	return out, err
}

// Get returns one of the tenant's notifications with its bodies (404 for
// an unknown id or another tenant's).
func Get(ctx context.Context, x db.Ext, tenantID, id string) (Item, error) {
	var it Item
	err := x.GetContext(ctx, &it, `SELECT id, kind, user_id, state, attempts, created_at, next_at, done_at, last_error, to_addr, subject,
		body_text, body_html, data FROM notifications WHERE tenant_id = ? AND id = ?`, tenantID, id)
	return it, db.MapErr(err, "message not found", "")
}

// CountFailed is how many of the tenant's notifications failed since.
func CountFailed(ctx context.Context, x db.Ext, tenantID string, since time.Time) (int, error) {
	var n int
	err := x.GetContext(ctx, &n, `SELECT COUNT(*) FROM notifications WHERE tenant_id = ? AND state = 'failed' AND created_at >= ?`, tenantID, since.UTC())
	return n, err
}

// List is List on the service's database.
func (s *Service) List(ctx context.Context, tenantID string, failedOnly bool) ([]Item, error) {
	return List(ctx, s.DB, tenantID, failedOnly)
}

// Get is Get on the service's database.
func (s *Service) Get(ctx context.Context, tenantID, id string) (Item, error) {
	return Get(ctx, s.DB, tenantID, id)
}

// Reveal puts the one-time link back into a previewed message (no SMTP:
// the preview is where the message is read) while the link is live; live
// reports whether it did. A sent message keeps LinkWithheld: its link
// went to the recipient only.
func (s *Service) Reveal(ctx context.Context, tenantID string, it Item) (out Item, live bool, err error) {
	if it.State != StatePreview || (it.Kind != KindInvitation && it.Kind != KindPasswordReset) || s.Links == nil {
		return it, false, nil
	}
	var data map[string]string
	if err := json.Unmarshal([]byte(it.Data), &data); err != nil {
		return it, false, err
	}
	link, _, err := s.Links.Link(ctx, tenantID, it.Kind, data["cause"])
	if apperr.Is(err, apperr.NotFound) {
		return it, false, nil
	}
	if err != nil {
		return it, false, err
	}
	for _, p := range []*string{it.Text, it.HTML} {
		if p != nil {
			*p = strings.ReplaceAll(*p, LinkWithheld, link)
		}
	}
	return it, true, nil
}

// Sending reports whether messages go out over SMTP (else they are kept
// for the preview).
func (s *Service) Sending() bool { return s.Mailer != nil }
