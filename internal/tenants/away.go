package tenants

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/audit"
	"leadpipe/internal/db"
)

// maxAway bounds "away until": a year ahead.
const maxAway = 366 * 24 * time.Hour

// SetAway marks a user away until a time (docs/ARCHITECTURE.md: round robin
// skips them meanwhile), or back (until nil), with its audit entry
// (user.away). A time in the past means back. The user's own settings
// page and an admin (PUT /api/v1/users/{id}/away) both come here.
func (s *Service) SetAway(ctx context.Context, tenantID, userID string, until *time.Time, now time.Time) (User, error) {
	if until != nil {
		if until.After(now.Add(maxAway)) {
			return User{}, apperr.InvalidFields(map[string]string{"until": "must be within a year"})
		}
		if !until.After(now) {
			until = nil
		} else {
			u := until.UTC()
			until = &u
		}
	}
	var out User
	err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE users SET away_until = ? WHERE tenant_id = ? AND id = ?`, until, tenantID, userID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			if _, err := getUser(ctx, tx, tenantID, userID); err != nil {
				return err
			}
		}
		detail := map[string]any{"until": until}
		if err := audit.Record(ctx, tx, tenantID, audit.Entry{Action: "user.away", TargetType: "user", TargetID: userID, Detail: detail}); err != nil {
			return err
		}
		out, err = getUser(ctx, tx, tenantID, userID)
		return err
	})
	return out, err
}
