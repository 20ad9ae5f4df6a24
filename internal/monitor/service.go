package monitor

import (
	"context"
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/clock"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
	"leadpipe/internal/sources"
	"leadpipe/internal/tenants"
)

// Service serves statistics, alert rules and alerts, and evaluates the
// rules. Every method takes tenantID first; callers check that a source
// belongs to the tenant (sources.Service.Get) before asking about it.
type Service struct {
	DB       *sqlx.DB
	Tenants  *tenants.Service
	Sources  *sources.Service
	Recorder *Recorder
	Log      *slog.Logger
	clock    func() time.Time

	// Retention of the per-minute and hourly rows (daily rows are kept).
	MinuteRetention, HourRetention time.Duration

	// fired is told, in the transaction that fires an alert, of the
	// alert (outbound alert.fired events are written there: the events
	// area's outbox); nil: nobody.
	fired FiredSink

	// leads answers the sla_breach rule's question (overdue first
	// responses). Required: without it an enabled sla_breach rule fails
	// its evaluation instead of never firing (NoFirstResponses says so on
	// purpose).
	leads FirstResponses

	// lagged serves the charts' reads (Stats), which tolerate a
	// replica's lag; nil: DB.
	lagged *db.Reads
}

// FiredSink is told of each alert in the transaction that fires it.
type FiredSink interface {
	AlertFired(ctx context.Context, tx db.Ext, tenantID string, a Alert) error
}

// NewService builds the service. leads counts overdue first responses for
// the sla_breach rule; fired (nil: nobody) is told of each alert fired;
// now is the clock (nil: the wall clock).
func NewService(d *sqlx.DB, ts *tenants.Service, ss *sources.Service, rec *Recorder, log *slog.Logger,
	leads FirstResponses, fired FiredSink, now func() time.Time, opts ...Option) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Service{DB: d, Tenants: ts, Sources: ss, Recorder: rec, Log: log, clock: now,
		MinuteRetention: 35 * 24 * time.Hour, HourRetention: 400 * 24 * time.Hour,
		fired: fired, leads: leads}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Option tunes a Service at construction.
type Option func(*Service)

// read runs a read that tolerates lag (charts, report totals) on the
// replica when it is usable, else on the primary.
func (s *Service) read(ctx context.Context, fn func(x *sqlx.DB) error) error {
	if s.lagged == nil {
		return fn(s.DB)
	}
	return s.lagged.Run(ctx, fn)
}

// WithReads serves the charts' reads from a replica when it is fresh
// enough (docs/SCALING.md, Database); without it they read DB.
func WithReads(r *db.Reads) Option { return func(s *Service) { s.lagged = r } }

func (s *Service) now() time.Time { return clock.Read(s.clock) }

// Now is the service's clock (the charts' default end).
func (s *Service) Now() time.Time { return s.now() }

// Bucket is one step of a source's statistics.
type Bucket struct {
	T              time.Time `json:"t"`
	Deliveries     int64     `json:"deliveries"`
	Duplicates     int64     `json:"duplicates"`
	DuplicateRate  float64   `json:"duplicate_rate"`
	Rejected       int64     `json:"rejected"`
	DeadLetters    int64     `json:"dead_letters"`
	ReconcileNew   int64     `json:"reconcile_new"`
	ReconcileKnown int64     `json:"reconcile_known"`
	// ProcessingFailures counts deliveries marked failed; Backfill the
	// records a source's first reconcile run brought in (not loss).
	ProcessingFailures int64 `json:"processing_failures"`
	Backfill           int64 `json:"backfill"`
}

// MaxBuckets bounds one Stats answer.
const MaxBuckets = 2000

// Stats returns a source's counters in buckets of step, aligned to
// multiples of step since the Unix epoch (so days are UTC days), from the
// bucket containing from up to to (exclusive); empty buckets are zeros.
// step must be a whole number of minutes. It reads the coarsest table
// whose granularity divides step: a 30-day chart at a daily step is 30
// rows, at an hourly step 720.
func (s *Service) Stats(ctx context.Context, tenantID, sourceID string, from, to time.Time, step time.Duration) ([]Bucket, error) {
	if f := ValidateRange(from, to, step); f != nil {
		return nil, apperr.InvalidFields(f)
	}
	st := int64(step / time.Second)
	start := floorDiv(from.Unix(), st) * st
	n := (to.Unix() - start + st - 1) / st
	end := start + n*st
	table, gran := tableMinute, int64(60)
	switch {
	case st%86400 == 0:
		table, gran = tableDay, 86400
	case st%3600 == 0:
		table, gran = tableHour, 3600
	}
	var got map[int64]counts
	var err error
	read := func(x *sqlx.DB) error {
		var err error
		got, err = seriesRows(ctx, x, table, gran, tenantID, sourceID, time.Unix(start, 0), time.Unix(end, 0), st)
		return err
	}
	err = s.read(ctx, read)
	if err != nil {
		return nil, err
	}
	out := make([]Bucket, n)
	for i := range out {
		t := start + int64(i)*st
		c := got[t]
		out[i] = Bucket{T: time.Unix(t, 0).UTC(), Deliveries: c[iDeliveries], Duplicates: c[iDuplicates],
			DuplicateRate: round6(Rate(c[iDuplicates], c[iDeliveries])), Rejected: c[iRejected], DeadLetters: c[iDeadLetters],
			ReconcileNew: c[iReconcileNew], ReconcileKnown: c[iReconcileKnown],
			ProcessingFailures: c[iProcessingFailures], Backfill: c[iBackfill]}
	}
	return out, nil
}

// ValidateRange checks a Stats range; the map names offending fields
// (from, to, step) or is nil.
func ValidateRange(from, to time.Time, step time.Duration) map[string]string {
	f := map[string]string{}
	switch {
	case step < time.Minute:
		f["step"] = "must be at least 60 seconds"
	case step%time.Minute != 0:
		f["step"] = "must be a whole number of minutes (a multiple of 60 seconds)"
	}
	if !from.Before(to) {
		f["from"] = "must be before to"
	}
	if len(f) == 0 {
		st := int64(step / time.Second)
		start := floorDiv(from.Unix(), st) * st
		if n := (to.Unix() - start + st - 1) / st; n > MaxBuckets {
			f["step"] = "too small for the range: at most 2000 buckets"
		}
	}
	if len(f) == 0 {
		return nil
	}
	return f
}

// ChartRange returns the range and step of a named chart ("1h": minutes,
// "6h" and "24h": 5-minute buckets, "7d": hourly, "30d": daily), ending
// with the bucket that holds now.
func ChartRange(name string, now time.Time) (from, to time.Time, step time.Duration, ok bool) {
	now = now.UTC()
	switch name {
	case "1h":
		step = time.Minute
		to = now.Truncate(step).Add(step)
		return to.Add(-time.Hour), to, step, true
	case "6h":
		step = 5 * time.Minute
		to = now.Truncate(step).Add(step)
		return to.Add(-6 * time.Hour), to, step, true
	case "24h":
		step = 5 * time.Minute
		to = now.Truncate(step).Add(step)
		return to.Add(-24 * time.Hour), to, step, true
	case "7d":
		step = time.Hour
		to = now.Truncate(step).Add(step)
		return to.Add(-7 * 24 * time.Hour), to, step, true
	case "30d":
		step = 24 * time.Hour
		to = now.Truncate(step).Add(step) // UTC days
		return to.Add(-30 * 24 * time.Hour), to, step, true
	}
	return time.Time{}, time.Time{}, 0, false
}

// SourceOverview is one row of the overview page.
type SourceOverview struct {
	SourceID string `json:"source_id"`
	Slug     string `json:"slug"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`

	// The last 60 minutes (including the current one).
	Deliveries  int64   `json:"deliveries"`
	Duplicates  int64   `json:"duplicates"`
	Rate        float64 `json:"rate"`
	Rejected    int64   `json:"rejected"`
	DeadLetters int64   `json:"dead_letters"`

	// What the evaluator sees now: the rules' window (default the last 15
	// complete minutes) and the baseline before it (default 24 h, the
	// source's normal). Threshold is the spike rule's alert line for this
	// baseline (0 when the rule is off) — draw it on the charts.
	WindowDeliveries   int64   `json:"window_deliveries"`
	WindowRate         float64 `json:"window_rate"`
	BaselineDeliveries int64   `json:"baseline_deliveries"`
	BaselineRate       float64 `json:"baseline_rate"`
	Threshold          float64 `json:"threshold"`

	// Sparkline: 24 hourly duplicate rates, oldest first, the last one
	// being the current (partial) hour; SparkVolume the deliveries.
	Sparkline   []float64 `json:"sparkline"`
	SparkVolume []int64   `json:"spark_volume"`

	OpenAlerts int   `json:"open_alerts"`
	Rules      Rules `json:"rules"`
	// OpenRules names the rules of the open alerts (newest first).
	OpenRules []string `json:"open_rules"`
}

// Overview returns every source of the tenant with its current duplicate
// rate, baseline and sparkline.
func (s *Service) Overview(ctx context.Context, tenantID string, now time.Time) ([]SourceOverview, error) {
	srcs, err := s.Sources.List(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	if len(srcs) == 0 {
		return []SourceOverview{}, nil
	}
	ids := make([]string, len(srcs))
	for i, src := range srcs {
		ids[i] = src.ID
	}
	now = now.UTC()
	end := now.Truncate(time.Minute).Add(time.Minute)
	last, err := sumRange(ctx, s.DB, tenantID, ids, end.Add(-time.Hour), end)
	if err != nil {
		return nil, err
	}
	rules, err := listRules(ctx, s.DB, tenantID)
	if err != nil {
		return nil, err
	}
	win, base, err := s.windowSums(ctx, tenantID, ids, rules, now)
	if err != nil {
		return nil, err
	}
	hEnd := now.Truncate(time.Hour).Add(time.Hour)
	hFrom := hEnd.Add(-24 * time.Hour)
	hours, err := hourRows(ctx, s.DB, tenantID, ids, hFrom, hEnd)
	if err != nil {
		return nil, err
	}
	open, err := listOpenAlerts(ctx, s.DB, tenantID)
	if err != nil {
		return nil, err
	}
	openBy, rulesBy := map[string]int{}, map[string][]string{}
	for _, a := range open {
		openBy[a.SourceID]++
		rulesBy[a.SourceID] = append(rulesBy[a.SourceID], a.Rule)
	}
	type hc struct{ del, dup int64 }
	spark := map[string]*[24]hc{}
	for _, h := range hours {
		i := int(h.Bucket.Sub(hFrom) / time.Hour)
		if i < 0 || i >= 24 {
			continue
		}
		p := spark[h.SourceID]
		if p == nil {
			p = new([24]hc)
			spark[h.SourceID] = p
		}
		p[i] = hc{h.Deliveries, h.Duplicates}
	}
	out := make([]SourceOverview, 0, len(srcs))
	for _, src := range srcs {
		r, ok := rules[src.ID]
		if !ok {
			r = DefaultRules(src.ID)
		}
		l, w, b := last[src.ID], win[src.ID], base[src.ID]
		o := SourceOverview{SourceID: src.ID, Slug: src.Slug, Name: src.Name, Kind: src.Kind,
			Deliveries: l[iDeliveries], Duplicates: l[iDuplicates], Rate: round6(Rate(l[iDuplicates], l[iDeliveries])),
			Rejected: l[iRejected], DeadLetters: l[iDeadLetters],
			WindowDeliveries: w[iDeliveries], WindowRate: round6(Rate(w[iDuplicates], w[iDeliveries])),
			BaselineDeliveries: b[iDeliveries], BaselineRate: round6(Rate(b[iDuplicates], b[iDeliveries])),
			Sparkline: make([]float64, 24), SparkVolume: make([]int64, 24), OpenAlerts: openBy[src.ID], Rules: r, OpenRules: rulesBy[src.ID]}
		if r.SpikeEnabled {
			o.Threshold = round6(r.SpikeThreshold(o.BaselineRate))
		}
		if p := spark[src.ID]; p != nil {
			for i, h := range p {
				o.Sparkline[i] = round6(Rate(h.dup, h.del))
				o.SparkVolume[i] = h.del
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// Rules returns a source's alert rules (the defaults when none were saved).
func (s *Service) Rules(ctx context.Context, tenantID, sourceID string) (Rules, error) {
	if !ids.Valid(sourceID) {
		return Rules{}, apperr.New(apperr.NotFound, "source not found")
	}
	return getRules(ctx, s.DB, tenantID, sourceID)
}

// SetRules validates and saves a source's alert rules; by names who (user
// or token) for the record.
func (s *Service) SetRules(ctx context.Context, tenantID string, r Rules, by string) (Rules, error) {
	if !ids.Valid(r.SourceID) {
		return Rules{}, apperr.New(apperr.NotFound, "source not found")
	}
	if f := r.Validate(); f != nil {
		return Rules{}, apperr.InvalidFields(f)
	}
	at := s.now().Truncate(time.Microsecond)
	if err := upsertRules(ctx, s.DB, tenantID, r, at, by); err != nil {
		return Rules{}, err
	}
	return getRules(ctx, s.DB, tenantID, r.SourceID)
}

// ResetRules forgets a source's saved rules (back to the defaults).
func (s *Service) ResetRules(ctx context.Context, tenantID, sourceID string) (Rules, error) {
	if !ids.Valid(sourceID) {
		return Rules{}, apperr.New(apperr.NotFound, "source not found")
	}
	if err := deleteRules(ctx, s.DB, tenantID, sourceID); err != nil {
		return Rules{}, err
	}
	return DefaultRules(sourceID), nil
}

// Purge deletes per-minute and hourly rows beyond their retention.
func (s *Service) Purge(ctx context.Context, now time.Time) error {
	return s.Tenants.ForEach(ctx, func(tenantID string) error {
		srcs, err := s.Sources.List(ctx, tenantID)
		if err != nil {
			return err
		}
		for _, src := range srcs {
			if _, err := purgeStats(ctx, s.DB, tableMinute, tenantID, src.ID, now.Add(-s.MinuteRetention)); err != nil {
				return err
			}
			if _, err := purgeStats(ctx, s.DB, tableHour, tenantID, src.ID, now.Add(-s.HourRetention)); err != nil {
				return err
			}
		}
		return nil
	})
}
