package notify

import (
	"context"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
)

// overdueLookback is how far back the scan looks for leads that fell
// overdue: a scan missed for a while (the worker down) still tells about
// the leads of the last day; older ones are in the digest.
const overdueLookback = 24 * time.Hour

// overdueBatch bounds the overdue leads one scan writes per tenant.
const overdueBatch = 1000

// digestHour is when, in each user's own zone, the daily digest is
// written; digestUntil the hour after which a missed one is not.
const (
	digestHour  = 8
	digestUntil = 12
)

// HandleScan writes every tenant's overdue notifications and due digests.
func (s *Service) HandleScan(ctx context.Context, _ *asynq.Task) error {
	ts, err := s.Tenants(ctx)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if err := s.Scan(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// Scan writes, for one tenant, "first response overdue" to the owner and
// the admins of each lead that fell overdue (once per lead and due time:
// the key holds the due time and the recipient), and each user's digest
// of the day once it is 08:00 where they are. The digest is checked for
// content when it is sent (none is sent when nothing is due).
func (s *Service) Scan(ctx context.Context, tenantID string) error {
	now := s.now()
	members, err := s.People.Members(ctx, tenantID)
	if err != nil {
		return err
	}
	var admins []string
	for _, m := range members {
		if m.Admin && m.Active {
			admins = append(admins, m.ID)
		}
	}
	ls, err := s.Leads.OverdueSince(ctx, tenantID, now.Add(-overdueLookback), now, overdueBatch)
	if err != nil {
		return err
	}
	var ns []Notification
	for _, l := range ls {
		if l.FirstResponseDue == nil {
			continue
		}
		due := strconv.FormatInt(l.FirstResponseDue.Unix(), 10)
		to := map[string]bool{}
		if l.OwnerID != "" {
			to[l.OwnerID] = true
		}
		for _, a := range admins {
			to[a] = true
		}
		for u := range to {
			ns = append(ns, Notification{Kind: KindOverdue, UserID: u, LeadID: l.ID, Subject: l.ID, Cause: due + "-" + u})
		}
	}
	for _, m := range members {
		if !m.Active {
			continue
		}
		loc := time.UTC
		if l, err := time.LoadLocation(m.TimeZone); err == nil && m.TimeZone != "" {
			loc = l
		}
		local := now.In(loc)
		if h := local.Hour(); h < digestHour || h >= digestUntil {
			continue
		}
		day := local.Format(time.DateOnly)
		ns = append(ns, Notification{Kind: KindDigest, UserID: m.ID, Subject: m.ID, Cause: day, Data: map[string]string{"day": day}})
	}
	if len(ns) == 0 {
		return nil
	}
	// Chunks keep one statement's size bounded.
	for len(ns) > 0 {
		n := min(len(ns), 500)
		if _, err := Write(ctx, s.DB, tenantID, now, ns[:n]); err != nil {
			return err
		}
		ns = ns[n:]
	}
	return nil
}
