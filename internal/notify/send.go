package notify

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/clip"
	"leadpipe/internal/clock"
)

// Task types.
const (
	// TypeSend sends one notification.
	TypeSend = "notify:send"
	// TypePump enqueues the due notifications of every tenant.
	TypePump = "notify:pump"
	// TypeScan writes the overdue notifications and the daily digests.
	TypeScan = "notify:scan"
)

// Person is a recipient as the tenants area knows them.
type Person struct {
	ID, Email, Name, TimeZone string
	Admin, Active             bool
}

// Directory is what notify asks of the tenants area.
type Directory interface {
	// Person returns a user of the tenant (an apperr NotFound when gone).
	Person(ctx context.Context, tenantID, userID string) (Person, error)
	// Members returns the tenant's users.
	Members(ctx context.Context, tenantID string) ([]Person, error)
	// TenantName is the tenant as its people name it.
	TenantName(ctx context.Context, tenantID string) (string, error)
}

// Leads is what notify asks of the leads area (read at send time).
type Leads interface {
	// Brief returns a lead (an apperr NotFound when erased or gone).
	Brief(ctx context.Context, tenantID, leadID string) (LeadBrief, error)
	// Agenda returns the user's open follow-ups due before before and
	// their leads whose first response is overdue at now.
	Agenda(ctx context.Context, tenantID, userID string, before, now time.Time) (due, overdue []LeadBrief, err error)
	// OverdueSince returns up to limit of the tenant's leads whose first
	// response fell overdue in [from, now).
	OverdueSince(ctx context.Context, tenantID string, from, now time.Time, limit int) ([]LeadBrief, error)
}

// Links makes the one-time links of invitations and resets, given the
// cause id the link's token was recorded under (the tenants area keeps
// the token hashed; it hands the link out once, to this message).
type Links interface {
	Link(ctx context.Context, tenantID, kind, causeID string) (link string, expires time.Time, err error)
}

// Service sends the outbox.
type Service struct {
	DB      *sqlx.DB
	Queue   *asynq.Client
	Mailer  Mailer // nil: keep every message for the preview
	From    string
	BaseURL string
	People  Directory
	Leads   Leads
	Links   Links // nil: invitation and reset links are not sent
	Tenants func(ctx context.Context) ([]string, error)
	Log     *slog.Logger
	Now     func() time.Time
	// AfterSend, when set, runs between the SMTP server's acceptance and
	// the mark (the fault tests hold the worker there).
	AfterSend func(ctx context.Context, key string)
}

func (s *Service) now() time.Time { return clock.Read(s.Now).UTC() }

type sendPayload struct {
	TenantID string `json:"t"`
	ID       string `json:"id"`
	Attempt  int    `json:"n"`
}

// TaskID names one attempt of a notification: an attempt is enqueued once
// however many pumps see it due.
func TaskID(id string, attempt int) string { return "notify:" + id + ":" + strconv.Itoa(attempt) }

// row is one notifications row as the sender reads it.
type row struct {
	TenantID  string    `db:"tenant_id"`
	ID        string    `db:"id"`
	Key       string    `db:"nkey"`
	Kind      string    `db:"kind"`
	UserID    string    `db:"user_id"`
	LeadID    *string   `db:"lead_id"`
	Data      string    `db:"data"`
	State     string    `db:"state"`
	Attempts  int       `db:"attempts"`
	CreatedAt time.Time `db:"created_at"`
	NextAt    time.Time `db:"next_at"`
}

// pumpBatch bounds the notifications one pump enqueues per tenant.
const pumpBatch = 500

// HandlePump enqueues every tenant's due pending notifications.
func (s *Service) HandlePump(ctx context.Context, _ *asynq.Task) error {
	ts, err := s.Tenants(ctx)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if _, err := s.Pump(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// Pump enqueues the tenant's due pending notifications (one task per
// attempt: TaskID). It returns how many were due.
func (s *Service) Pump(ctx context.Context, tenantID string) (int, error) {
	var due []struct {
		ID       string `db:"id"`
		Attempts int    `db:"attempts"`
	}
	if err := s.DB.SelectContext(ctx, &due, `SELECT id, attempts FROM notifications
		WHERE tenant_id = ? AND state = 'pending' AND next_at <= ? ORDER BY next_at LIMIT ?`, tenantID, s.now(), pumpBatch); err != nil {
		return 0, err
	}
	for _, d := range due {
		b, _ := json.Marshal(sendPayload{TenantID: tenantID, ID: d.ID, Attempt: d.Attempts})
		_, err := s.Queue.EnqueueContext(ctx, asynq.NewTask(TypeSend, b), asynq.TaskID(TaskID(d.ID, d.Attempts)),
			asynq.MaxRetry(5), asynq.Timeout(2*time.Minute))
		if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
			return 0, err
		}
	}
	return len(due), nil
}

// HandleSend sends one notification (at least once: a crash between the
// SMTP server's acceptance and the mark sends it again, with the same
// Message-ID).
func (s *Service) HandleSend(ctx context.Context, t *asynq.Task) error {
	var p sendPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return fmt.Errorf("notify: payload: %v: %w", err, asynq.SkipRetry)
	}
	return s.Send(ctx, p.TenantID, p.ID)
}

// Send sends (or previews, or skips) one pending notification.
func (s *Service) Send(ctx context.Context, tenantID, id string) error {
	var r row
	err := s.DB.GetContext(ctx, &r, `SELECT tenant_id, id, nkey, kind, user_id, lead_id, data, state, attempts, created_at, next_at
		FROM notifications WHERE tenant_id = ? AND id = ?`, tenantID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	now := s.now()
	if r.State != StatePending || r.NextAt.After(now) {
		return nil
	}
	msg, link, err := s.compose(ctx, r)
	if err != nil {
		return err
	}
	skip := ""
	if msg == nil {
		skip, link = link, ""
	}
	// What is kept of a message never holds its one-time link (the
	// tenants area keeps only a hash of it): the preview puts it back
	// while it is live (Reveal).
	stored := withheld(msg, link)
	if skip != "" {
		return s.finish(ctx, r, StateSkipped, skip, nil)
	}
	if optional(r.Kind) {
		quiet, until, err := s.quiet(ctx, r, now)
		if err != nil {
			return err
		}
		if quiet {
			_, err := s.DB.ExecContext(ctx, `UPDATE notifications SET next_at = ? WHERE tenant_id = ? AND id = ? AND state = 'pending'`,
				until, r.TenantID, r.ID)
			return err
		}
	}
	if s.Mailer == nil {
		return s.finish(ctx, r, StatePreview, "", stored)
	}
	serr := s.Mailer.Send(ctx, *msg)
	if serr == nil {
		if s.AfterSend != nil {
			s.AfterSend(ctx, r.Key)
		}
		return s.finish(ctx, r, StateSent, "", stored)
	}
	var se *SendError
	temporary := !errors.As(serr, &se) || se.Temporary
	reason := clip.Bytes(serr.Error(), 480, "")
	next := now.Add(Backoff(r.Attempts + 1))
	if !temporary || next.After(r.CreatedAt.Add(GiveUpAfter)) {
		s.logger().Warn("notification failed", "tenant_id", r.TenantID, "key", r.Key, "attempts", r.Attempts+1, "err", reason)
		return s.finish(ctx, r, StateFailed, reason, stored)
	}
	s.logger().Info("notification deferred", "tenant_id", r.TenantID, "key", r.Key, "attempts", r.Attempts+1, "retry_at", next, "err", reason)
	_, err = s.DB.ExecContext(ctx, `UPDATE notifications SET attempts = attempts + 1, next_at = ?, last_error = ?
		WHERE tenant_id = ? AND id = ? AND state = 'pending' AND attempts = ?`, next, reason, r.TenantID, r.ID, r.Attempts)
	return err
}

// Backoff is the wait before attempt n (1, 2, …): 30 s doubling to an
// hour at most, with a tenth of jitter.
func Backoff(n int) time.Duration {
	d := 30 * time.Second
	for i := 1; i < n && d < time.Hour; i++ {
		d *= 2
	}
	d = min(d, time.Hour)
	return d + time.Duration(rand.Int64N(int64(d/10)+1))
}

// finish marks a pending notification done with the message as rendered.
func (s *Service) finish(ctx context.Context, r row, state, reason string, m *Message) error {
	var to, subject, text, html any
	if m != nil {
		to, subject, text, html = m.To, m.Subject, m.Text, m.HTML
	}
	var why any
	if reason != "" {
		why = reason
	}
	attempts := r.Attempts
	if state == StateSent || state == StateFailed {
		attempts++
	}
	_, err := s.DB.ExecContext(ctx, `UPDATE notifications SET state = ?, attempts = ?, done_at = ?, last_error = IFNULL(?, last_error),
		to_addr = ?, subject = ?, body_text = ?, body_html = ? WHERE tenant_id = ? AND id = ? AND state = 'pending'`,
		state, attempts, s.now(), why, to, subject, text, html, r.TenantID, r.ID)
	return err
}

// LinkWithheld stands for a one-time link in a kept message.
const LinkWithheld = "https://link-withheld.invalid/"

// withheld is m with link replaced by LinkWithheld ("" link: m).
func withheld(m *Message, link string) *Message {
	if m == nil || link == "" {
		return m
	}
	c := *m
	c.Text = strings.ReplaceAll(c.Text, link, LinkWithheld)
	c.HTML = strings.ReplaceAll(c.HTML, link, LinkWithheld)
	return &c
}

// compose renders the message of r for its recipient with its one-time
// link when it has one (returned too), or (nil message) says why it is
// skipped (recipient gone or disabled, kind turned off, lead erased, link
// used).
func (s *Service) compose(ctx context.Context, r row) (*Message, string, error) {
	p, err := s.People.Person(ctx, r.TenantID, r.UserID)
	if apperr.Is(err, apperr.NotFound) {
		return nil, "the user no longer exists", nil
	}
	if err != nil {
		return nil, "", err
	}
	if !p.Active && r.Kind != KindInvitation {
		return nil, "the user is disabled", nil
	}
	if optional(r.Kind) {
		pr, err := Prefs(ctx, s.DB, r.TenantID, r.UserID)
		if err != nil {
			return nil, "", err
		}
		if pr.Off(r.Kind) {
			return nil, "turned off by the user", nil
		}
	}
	loc := time.UTC
	if p.TimeZone != "" {
		if l, err := time.LoadLocation(p.TimeZone); err == nil {
			loc = l
		}
	}
	var data map[string]string
	if err := json.Unmarshal([]byte(r.Data), &data); err != nil {
		return nil, "", fmt.Errorf("notify: data of %s: %w", r.Key, err)
	}
	v := View{Name: p.Name, BaseURL: s.BaseURL, Rule: data["rule"], Inviter: data["inviter"]}
	if v.Name == "" {
		v.Name = p.Email
	}
	if v.Tenant, err = s.People.TenantName(ctx, r.TenantID); err != nil {
		return nil, "", err
	}
	if r.LeadID != nil {
		l, err := s.Leads.Brief(ctx, r.TenantID, *r.LeadID)
		if apperr.Is(err, apperr.NotFound) {
			return nil, "the lead no longer exists", nil
		}
		if err != nil {
			return nil, "", err
		}
		v.Lead = l
		if r.Kind == KindOverdue && l.OwnerID != "" && l.OwnerID != r.UserID {
			if o, err := s.People.Person(ctx, r.TenantID, l.OwnerID); err == nil {
				v.Owner = o.Name
			}
		}
	}
	switch r.Kind {
	case KindDigest:
		day, err := time.ParseInLocation(time.DateOnly, data["day"], loc)
		if err != nil {
			return nil, "", fmt.Errorf("notify: digest day of %s: %w", r.Key, err)
		}
		v.Due, v.Overdue, err = s.Leads.Agenda(ctx, r.TenantID, r.UserID, day.AddDate(0, 0, 1), s.now())
		if err != nil {
			return nil, "", err
		}
		if len(v.Due) == 0 && len(v.Overdue) == 0 {
			return nil, "nothing due", nil
		}
	case KindInvitation, KindPasswordReset:
		if s.Links == nil {
			return nil, "links are not configured", nil
		}
		link, exp, err := s.Links.Link(ctx, r.TenantID, r.Kind, data["cause"])
		if apperr.Is(err, apperr.NotFound) {
			return nil, "the link was used or withdrawn", nil
		}
		if err != nil {
			return nil, "", err
		}
		v.Link, v.Expires = link, exp
	}
	subject, text, html, err := Render(r.Kind, v, loc)
	if err != nil {
		return nil, "", err
	}
	return &Message{MessageID: MessageID(r.Key, s.From), From: s.From, To: p.Email, ToName: p.Name,
		Subject: subject, Text: text, HTML: html, Date: s.now()}, v.Link, nil
}

// quiet reports whether now is in the recipient's quiet hours, and until
// when.
func (s *Service) quiet(ctx context.Context, r row, now time.Time) (bool, time.Time, error) {
	pr, err := Prefs(ctx, s.DB, r.TenantID, r.UserID)
	if err != nil || pr.QuietFrom == pr.QuietTo {
		return false, time.Time{}, err
	}
	p, err := s.People.Person(ctx, r.TenantID, r.UserID)
	if err != nil {
		return false, time.Time{}, err
	}
	loc := time.UTC
	if l, err := time.LoadLocation(p.TimeZone); err == nil && p.TimeZone != "" {
		loc = l
	}
	in, until := pr.QuietAt(now.In(loc))
	return in, until.UTC(), nil
}

func (s *Service) logger() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}
