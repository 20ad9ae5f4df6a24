// Package notify is the e-mail outbox (docs/NOTIFICATIONS.md): a
// notification is a row written in the transaction of its cause with a
// unique key, and the worker sends it over SMTP with that key as the
// Message-ID, marks it sent, retries transient refusals with backoff and
// gives up after GiveUpAfter. Without SMTP the rendered message is kept
// for the admins' mail preview instead.
package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"leadpipe/internal/db"
	"leadpipe/internal/ids"
)

// Kinds of notification.
const (
	KindInvitation    = "invitation"
	KindPasswordReset = "password_reset"
	KindAssigned      = "assigned"
	KindOverdue       = "overdue"
	KindDigest        = "digest"
)

// Kinds lists every kind, in the order the settings show them.
var Kinds = []string{KindAssigned, KindOverdue, KindDigest, KindInvitation, KindPasswordReset}

// optional reports whether a user may turn a kind off and whether quiet
// hours hold it back: an invitation or a reset link the person asked for
// always goes at once.
func optional(kind string) bool {
	return kind == KindAssigned || kind == KindOverdue || kind == KindDigest
}

// States of a notification row.
const (
	StatePending = "pending"
	StateSent    = "sent"
	StatePreview = "preview"
	StateSkipped = "skipped"
	StateFailed  = "failed"
)

// GiveUpAfter is how long transient failures are retried before a
// notification is marked failed.
const GiveUpAfter = 24 * time.Hour

// Notification is one message to write: to UserID, about LeadID (may be
// empty). Subject and Cause make its key: <kind>:<subject>:<cause>, the
// subject being the lead or the user it is about.
type Notification struct {
	Kind    string
	UserID  string
	LeadID  string
	Subject string
	Cause   string
	// Data is what the template needs beyond the recipient and the lead,
	// read again at send time (never a secret: a link's token is kept
	// hashed by its owner, see Link).
	Data map[string]string
}

// Key is the notification's unique key.
func (n Notification) Key() string { return n.Kind + ":" + n.Subject + ":" + n.Cause }

// maxKey bounds a key (notifications.nkey): longer causes are refused,
// never cut (an INSERT IGNORE would cut them silently).
const maxKey = 160

// Write adds notifications in the caller's transaction (the cause's); a
// key already written is left as it is (RowsAffected tells how many
// were new). Rows are inserted in key order so concurrent writers take
// the unique index in one order.
func Write(ctx context.Context, x db.Ext, tenantID string, now time.Time, ns []Notification) (int64, error) {
	if len(ns) == 0 {
		return 0, nil
	}
	var b strings.Builder
	b.WriteString(`INSERT IGNORE INTO notifications (tenant_id, id, nkey, kind, user_id, lead_id, data, state, attempts, created_at, next_at) VALUES `)
	args := make([]any, 0, len(ns)*9)
	sorted := append([]Notification(nil), ns...)
	sortByKey(sorted)
	now = now.UTC()
	for i, n := range sorted {
		k := n.Key()
		if len(k) > maxKey || n.UserID == "" || n.Kind == "" {
			return 0, fmt.Errorf("notify: bad notification %q for %q", k, n.UserID)
		}
		data := n.Data
		if data == nil {
			data = map[string]string{}
		}
		raw, err := json.Marshal(data)
		if err != nil {
			return 0, err
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`(?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?)`)
		var lead any
		if n.LeadID != "" {
			lead = n.LeadID
		}
		args = append(args, tenantID, ids.New(), k, n.Kind, n.UserID, lead, string(raw), now, now)
	}
	res, err := x.ExecContext(ctx, b.String(), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func sortByKey(ns []Notification) {
	slices.SortFunc(ns, func(a, b Notification) int { return strings.Compare(a.Key(), b.Key()) })
}

// MessageID is the Message-ID of a notification's key (without the angle
// brackets): the key with ':' as '.' (a colon is not allowed on the left
// of an RFC 5322 id) at the sender's domain. Every attempt at one
// notification sends the same id, so a receiving system that dedupes by it
// shows a resend once.
func MessageID(key, from string) string {
	domain := "leadpipe.invalid"
	if at := strings.LastIndexByte(from, '@'); at >= 0 && at < len(from)-1 {
		domain = strings.TrimRight(from[at+1:], ">")
	}
	return strings.ReplaceAll(key, ":", ".") + "@" + domain
}
