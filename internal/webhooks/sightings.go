package webhooks

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/batch"
	"leadpipe/internal/db"
	"leadpipe/internal/leads"
)

// Sightings brings leads.times_seen up to date with the duplicates counted
// on their deliveries. A duplicate is committed as a count on its original
// delivery (deliveries.dup_count) by the claim batch itself; the lead's
// times_seen then follows within a flush interval. The claimer only hints
// which deliveries got duplicates (the claim batch every one; the fast
// path's tally flush only those it saw processed into a lead that is
// behind, dupfast.go): the flush moves the difference
// dup_count - dups_counted, read under the delivery's row lock, so a hint
// repeated or a flush retried never counts twice. A delivery not yet
// processed is left to the worker, which adds 1 + dup_count when it
// upserts the lead. Hints lost in a crash leave times_seen short until that
// delivery's next duplicate or its reprocessing.
type Sightings struct {
	DB    *sqlx.DB
	Log   *slog.Logger
	Every time.Duration // default 500 ms

	mu      sync.Mutex
	pending map[DeliveryRef]struct{}
	loop    batch.Flusher
}

// Add notes deliveries that got duplicates (the claimer's OnDuplicates).
func (s *Sightings) Add(refs []DeliveryRef) {
	s.mu.Lock()
	if s.pending == nil {
		s.pending = map[DeliveryRef]struct{}{}
	}
	for _, r := range refs {
		s.pending[r] = struct{}{}
	}
	s.mu.Unlock()
}

// Start flushes every interval until Close.
func (s *Sightings) Start() {
	every := s.Every
	if every <= 0 {
		every = 500 * time.Millisecond
	}
	s.loop.Start(every, s.Flush, func(err error) {
		s.Log.Warn("times_seen sync failed; will retry", "err", err)
	})
}

// Close stops the loop and flushes once more.
func (s *Sightings) Close(ctx context.Context) error {
	s.loop.Stop()
	return s.Flush(ctx)
}

// Flush applies what is pending now.
func (s *Sightings) Flush(ctx context.Context) error {
	s.mu.Lock()
	pending := s.pending
	s.pending = nil
	s.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	byTenant := map[string][]string{}
	for r := range pending {
		byTenant[r.TenantID] = append(byTenant[r.TenantID], r.ID)
	}
	var firstErr error
	for tenantID, ids := range byTenant {
		for len(ids) > 0 {
			n := min(len(ids), 500)
			if err := SyncSightings(ctx, s.DB, tenantID, ids[:n]); err != nil {
				if firstErr == nil {
					firstErr = err
				}
				refs := make([]DeliveryRef, 0, len(ids))
				for _, id := range ids {
					refs = append(refs, DeliveryRef{tenantID, id})
				}
				s.Add(refs) // next time
				break
			}
			ids = ids[n:]
		}
	}
	return firstErr
}

// SyncSightings adds to each lead's times_seen the duplicates of its
// processed deliveries ids that it does not hold yet, in one transaction.
func SyncSightings(ctx context.Context, d *sqlx.DB, tenantID string, ids []string) error {
	return db.InTx(ctx, d, func(tx *sqlx.Tx) error {
		var rows []struct {
			ID     string `db:"id"`
			LeadID string `db:"lead_id"`
			N      int    `db:"n"`
		}
		if err := db.SelectIn(ctx, tx, &rows, `SELECT id, lead_id, dup_count - dups_counted AS n FROM deliveries
			WHERE tenant_id = ? AND id IN (?) AND state = 'processed' AND lead_id IS NOT NULL AND dup_count > dups_counted
			ORDER BY id FOR UPDATE`, tenantID, ids); err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		add := map[string]int{}
		var leadOrder []string
		for _, r := range rows {
			if _, ok := add[r.LeadID]; !ok {
				leadOrder = append(leadOrder, r.LeadID)
			}
			add[r.LeadID] += r.N
		}
		if err := leads.AddSightings(ctx, tx, tenantID, leadOrder, add); err != nil {
			return err
		}
		dids := make([]string, len(rows))
		for i, r := range rows {
			dids[i] = r.ID
		}
		_, err := db.ExecIn(ctx, tx, `UPDATE deliveries SET dups_counted = dup_count WHERE tenant_id = ? AND id IN (?)`, tenantID, dids)
		return err
	})
}
