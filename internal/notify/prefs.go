package notify

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"leadpipe/internal/apperr"
	"leadpipe/internal/db"
)

// Preferences is GET|PUT /api/v1/me/notifications: the kinds a user turned
// off, and quiet hours ("22:00" to "07:00" in the user's own zone; equal
// or empty: none) during which assigned, overdue and digest messages wait.
type Preferences struct {
	Off       []string `json:"off"`
	QuietFrom string   `json:"quiet_from"`
	QuietTo   string   `json:"quiet_to"`
}

// prefs is a stored row: quiet hours in minutes of the day.
type prefs struct {
	off                []string
	QuietFrom, QuietTo int
}

// Off reports whether the user turned kind off.
func (p prefs) Off(kind string) bool { return slices.Contains(p.off, kind) }

// QuietAt reports whether local (in the user's zone) is in the quiet
// hours and, if so, when they end.
func (p prefs) QuietAt(local time.Time) (bool, time.Time) {
	if p.QuietFrom == p.QuietTo {
		return false, time.Time{}
	}
	m := local.Hour()*60 + local.Minute()
	var in bool
	if p.QuietFrom < p.QuietTo {
		in = m >= p.QuietFrom && m < p.QuietTo
	} else {
		in = m >= p.QuietFrom || m < p.QuietTo
	}
	if !in {
		return false, time.Time{}
	}
	y, mo, d := local.Date()
	end := time.Date(y, mo, d, p.QuietTo/60, p.QuietTo%60, 0, 0, local.Location())
	if !end.After(local) {
		end = end.AddDate(0, 0, 1)
	}
	return true, end
}

// Prefs reads a user's stored preferences (everything on without a row).
func Prefs(ctx context.Context, x db.Ext, tenantID, userID string) (prefs, error) {
	var r struct {
		Off  string `db:"kinds_off"`
		From int    `db:"quiet_from"`
		To   int    `db:"quiet_to"`
	}
	err := x.GetContext(ctx, &r, `SELECT kinds_off, quiet_from, quiet_to FROM notification_prefs WHERE tenant_id = ? AND user_id = ?`, tenantID, userID)
	if errors.Is(err, sql.ErrNoRows) {
		return prefs{}, nil
	}
	if err != nil {
		return prefs{}, err
	}
	p := prefs{QuietFrom: r.From, QuietTo: r.To}
	if err := json.Unmarshal([]byte(r.Off), &p.off); err != nil {
		return prefs{}, fmt.Errorf("notification_prefs: %w", err)
	}
	return p, nil
}

// GetPreferences returns the user's preferences for the API.
func GetPreferences(ctx context.Context, x db.Ext, tenantID, userID string) (Preferences, error) {
	p, err := Prefs(ctx, x, tenantID, userID)
	if err != nil {
		return Preferences{}, err
	}
	out := Preferences{Off: p.off}
	if out.Off == nil {
		out.Off = []string{}
	}
	if p.QuietFrom != p.QuietTo {
		out.QuietFrom, out.QuietTo = hhmm(p.QuietFrom), hhmm(p.QuietTo)
	}
	return out, nil
}

var clockRE = regexp.MustCompile(`^([01]\d|2[0-3]):([0-5]\d)$`)

func minutes(s string) (int, bool) {
	m := clockRE.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	h, _ := strconv.Atoi(m[1])
	mi, _ := strconv.Atoi(m[2])
	return h*60 + mi, true
}

func hhmm(m int) string { return fmt.Sprintf("%02d:%02d", m/60, m%60) }

// PutPreferences validates and stores the user's preferences (422 naming
// the field).
func PutPreferences(ctx context.Context, x db.Ext, tenantID, userID string, in Preferences, now time.Time) (Preferences, error) {
	bad := map[string]string{}
	off := []string{}
	for _, k := range in.Off {
		if !optional(k) {
			bad["off"] = "may hold assigned, overdue and digest (invitations and password resets always go)"
			continue
		}
		if !slices.Contains(off, k) {
			off = append(off, k)
		}
	}
	var from, to int
	if in.QuietFrom != "" || in.QuietTo != "" {
		var ok bool
		if from, ok = minutes(in.QuietFrom); !ok {
			bad["quiet_from"] = "must be a time like 22:00"
		}
		if to, ok = minutes(in.QuietTo); !ok {
			bad["quiet_to"] = "must be a time like 07:00"
		}
	}
	if len(bad) > 0 {
		return Preferences{}, apperr.InvalidFields(bad)
	}
	slices.Sort(off)
	raw, _ := json.Marshal(off)
	if _, err := x.ExecContext(ctx, `INSERT INTO notification_prefs (tenant_id, user_id, kinds_off, quiet_from, quiet_to, updated_at)
		VALUES (?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE kinds_off = VALUES(kinds_off), quiet_from = VALUES(quiet_from),
		quiet_to = VALUES(quiet_to), updated_at = VALUES(updated_at)`, tenantID, userID, string(raw), from, to, now.UTC()); err != nil {
		return Preferences{}, err
	}
	return GetPreferences(ctx, x, tenantID, userID)
}

// Preferences returns the user's preferences (GetPreferences on the
// service's database).
func (s *Service) Preferences(ctx context.Context, tenantID, userID string) (Preferences, error) {
	return GetPreferences(ctx, s.DB, tenantID, userID)
}

// SetPreferences stores the user's preferences (PutPreferences).
func (s *Service) SetPreferences(ctx context.Context, tenantID, userID string, in Preferences) (Preferences, error) {
	return PutPreferences(ctx, s.DB, tenantID, userID, in, s.now())
}

// Optional lists the kinds a user may turn off, in display order.
func Optional() []string { return []string{KindAssigned, KindOverdue, KindDigest} }
