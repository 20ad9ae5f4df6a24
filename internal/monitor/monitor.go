// Package monitor counts deliveries per tenant, source and minute, serves
// the duplicate-rate statistics and charts' data, evaluates alert rules
// and exposes Prometheus metrics.
package monitor

import "time"

// Counter names (one column each in the per-minute statistics).
const (
	Deliveries     = "deliveries"      // every accepted delivery, new or duplicate
	Duplicates     = "duplicates"      // already-seen delivery ids
	Rejected       = "rejected"        // bad, missing or stale signatures
	DeadLetters    = "dead_letters"    // signed but unparseable / no delivery id
	ReconcileNew   = "reconcile_new"   // reconcile found a record the webhooks never brought
	ReconcileKnown = "reconcile_known" // reconcile found a record already known
	// ProcessingFailures counts deliveries whose processing gave up (state
	// `failed`: no natural key, misconfigured source, retries used up).
	ProcessingFailures = "processing_failures"
	// Backfill counts records a source's first reconcile run brought in
	// (history from before Leadpipe, not webhook loss).
	Backfill = "backfill"
)

// Sink receives counter increments from the ingest and reconcile paths.
// Add must be cheap and never block on the database.
type Sink interface {
	Add(tenantID, sourceID, counter string, n int64, at time.Time)
	ObserveIngest(kind, result string, d time.Duration)
}

// Discard is a Sink that drops everything (tests of other packages).
type Discard struct{}

func (Discard) Add(string, string, string, int64, time.Time) {}
func (Discard) ObserveIngest(string, string, time.Duration)  {}
