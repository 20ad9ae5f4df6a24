// Package events delivers Leadpipe's own events (lead.created, lead.updated,
// lead.status_changed, alert.fired) to tenants' HTTPS endpoints as Standard
// Webhooks (docs/API.md, "Outbound events").
//
// The path of an event: Outbox.Emit writes it in the transaction of the
// change that causes it; the Relay claims committed rows with a conditional
// UPDATE, fans each out to one event_deliveries row per subscribed endpoint
// and marks it relayed; Pump moves at most MaxInFlight due deliveries per
// endpoint into Asynq (TaskID = delivery id + attempt number); HandleDeliver
// claims the attempt in MySQL (attempts n-1 → n), signs and sends it through
// the SSRF-guarded outbound client, records the attempt and schedules the
// next one. Sweep re-pumps what Redis or a crash left behind and disables
// endpoints failing for 5 days.
package events

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jmoiron/sqlx"

	"leadpipe/internal/atrest"
	"leadpipe/internal/clock"
	"leadpipe/internal/db"
	"leadpipe/internal/outbound"
)

// Event types.
const (
	LeadCreated       = "lead.created"
	LeadUpdated       = "lead.updated"
	LeadStatusChanged = "lead.status_changed"
	AlertFired        = "alert.fired"
)

// Types lists every event type the code emits (the AsyncAPI test checks
// each is documented).
var Types = []string{LeadCreated, LeadUpdated, LeadStatusChanged, AlertFired}

// KnownType reports whether t is an event type.
func KnownType(t string) bool { return slices.Contains(Types, t) }

// Event is what a caller emits: the type, the resource it is about (a lead
// or alert id, for the per-resource sequence) and the resource as the API
// shows it.
type Event struct {
	Type       string
	ResourceID string
	Data       any // marshalled with encoding/json; json.RawMessage is kept as is
}

// Envelope is the body of every delivery.
type Envelope struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"created_at"`
	Sequence  int64           `json:"sequence"`
	Data      json.RawMessage `json:"data"`
}

// Delivery states.
const (
	StatePending   = "pending"
	StateQueued    = "queued"
	StateSending   = "sending"
	StateDelivered = "delivered"
	StateFailed    = "failed"
)

// Schedule is the wait before each retry (docs/API.md, "Outbound events"): the first attempt
// goes immediately, the last retry 24 h after the one before; about 3 days
// 3.5 hours in all.
var Schedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
	5 * time.Hour, 10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour}

// MaxAttempts is the first attempt plus one per Schedule entry.
var MaxAttempts = len(Schedule) + 1

// DisableAfter is how long an endpoint may fail without a single success
// before it is disabled.
const DisableAfter = 5 * 24 * time.Hour

// TypeDeliver is the Asynq task of one delivery attempt; TypeSweep the
// periodic re-pump.
const (
	TypeDeliver = "event:deliver"
	TypeSweep   = "event:sweep"
	// Queue is the Asynq queue of delivery attempts. It is served by its own
	// Asynq server (see app.RunWorker), so slow endpoints never take the
	// workers that process inbound webhooks.
	Queue = "events"
)

// Enqueuer is the part of *asynq.Client the service uses.
type Enqueuer interface {
	EnqueueContext(ctx context.Context, t *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error)
}

// EndpointAlerts opens and resolves an endpoint's endpoint_disabled alert
// in the caller's transaction.
type EndpointAlerts interface {
	OpenEndpointAlert(ctx context.Context, tx db.Ext, tenantID, endpointID string, detail map[string]any) error
	ResolveEndpointAlert(ctx context.Context, tx db.Ext, tenantID, endpointID string) error
}

// Service owns endpoints, the relay, delivery and replay.
type Service struct {
	DB     *sqlx.DB
	Box    *atrest.Box
	Queue  Enqueuer
	Client *outbound.Client // the SSRF-guarded client; see NewClient
	Log    *slog.Logger

	// CheckURL validates an endpoint URL at save time (the SSRF guard with
	// LEADPIPE_ALLOW_PRIVATE_TARGETS); AllowHTTP permits plain http.
	CheckURL func(raw string) error

	Now  func() time.Time // injectable clock
	Rand func() float64   // jitter, in [0,1)

	// Tenants lists every tenant id (the relay and sweeper walk them).
	Tenants func(ctx context.Context) ([]string, error)

	// Alerts opens the endpoint_disabled alert in the transaction that
	// disables an endpoint by itself (410, 5 days of failures) and
	// resolves it in the one that re-enables it (the monitor area); nil:
	// no alerts.
	Alerts EndpointAlerts

	// MaxInFlight caps the attempts of one endpoint that are queued or
	// running at once, so one slow endpoint holds at most that many workers.
	MaxInFlight int
	// Timeout is the total time of one attempt (15 s).
	Timeout time.Duration
	// LeaseFor is how long a claimed attempt may run before the sweeper
	// assumes its worker died.
	LeaseFor time.Duration
	// RequeueAfter is how long a queued attempt may wait before the sweeper
	// enqueues it again (an enqueue lost to a Redis outage).
	RequeueAfter time.Duration

	pumpMu sync.Mutex
}

// NewClient is the outbound client for deliveries: one try per attempt (the
// schedule retries), no redirects, a small response cap.
func NewClient(allowPrivate bool) *outbound.Client {
	return outbound.New(outbound.Options{AllowPrivate: allowPrivate, MaxAttempts: 1,
		ConnectTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second, MaxBody: 64 << 10})
}

func (s *Service) now() time.Time { return clock.Read(s.Now) }

func (s *Service) rand() float64 {
	if s.Rand == nil {
		return rand.Float64()
	}
	return s.Rand()
}

func (s *Service) maxInFlight() int {
	if s.MaxInFlight <= 0 {
		return 8
	}
	return s.MaxInFlight
}

func (s *Service) timeout() time.Duration {
	if s.Timeout <= 0 {
		return 15 * time.Second
	}
	return s.Timeout
}

func (s *Service) leaseFor() time.Duration {
	if s.LeaseFor <= 0 {
		return time.Minute
	}
	return s.LeaseFor
}

func (s *Service) requeueAfter() time.Duration {
	if s.RequeueAfter <= 0 {
		return time.Minute
	}
	return s.RequeueAfter
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

// nextDelay is the wait after attempt n (1-based) failed, with ±10 % jitter
// so endpoints that failed together do not retry in lockstep; ok is false
// when the schedule is exhausted.
func (s *Service) nextDelay(n int) (time.Duration, bool) {
	if n < 1 || n > len(Schedule) {
		return 0, false
	}
	d := Schedule[n-1]
	return time.Duration(float64(d) * (0.9 + 0.2*s.rand())), true
}
