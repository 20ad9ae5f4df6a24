package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/app"
	"leadpipe/internal/leads"
	"leadpipe/internal/sources"
	"leadpipe/internal/tenants"
	"leadpipe/internal/webhooks/kinds"
)

// runAssignCompare measures what one assignment rule costs the worker's
// drain, in one run: pairs of drains of n stored deliveries (each a new
// lead), each drain under a fresh tenant with one source, one without
// rules and one with a round-robin rule among 3 users (or a fixed owner),
// the order alternating pair by pair (none first, then rule first, …)
// so that neither side always meets the larger table or the warmer
// cache. The worker is started for each drain and stopped after it.
// Reported: each drain's leads/s, each pair's rule/none ratio, and the
// ratio of the summed rates; the machine's load average beside each pair.
func runAssignCompare(ctx context.Context, a *app.App, raw *sqlx.DB, n, pairs, conns, conc int, owner bool) error {
	kind := "round-robin rule among 3 users"
	if owner {
		kind = "fixed-owner rule"
	}
	fmt.Printf("assignment cost in the drain: %d pairs of %d-delivery drains (worker concurrency %d), without rules vs one %s\n", pairs, n, conc, kind)
	seq := 0
	locks := map[bool]string{} // the last drain's row lock waits (server-wide: other clients' count too)
	drainOnce := func(withRule bool) (drainResult, error) {
		seq++
		slug := fmt.Sprintf("cmp-%d", seq)
		tenantID, sourceID, err := cmpTenant(ctx, a, slug, withRule, owner)
		if err != nil {
			return drainResult{}, err
		}
		var stop func()
		// Each drain starts after InnoDB wrote back the last one's redo
		// (settleMariaDB): otherwise the second of a pair shares the CPU
		// with the first one's page flushing.
		dr := drain{raw: raw, queue: a.Queue, tenantID: tenantID, sourceID: sourceID, n: n, conns: conns, noBase: true,
			settle: func() { settleMariaDB(ctx, raw, time.Minute) },
			startWorker: func() error {
				wctx, cancel := context.WithCancel(ctx)
				done := make(chan struct{})
				go func() { defer close(done); _ = a.RunWorker(wctx, conc) }()
				stop = func() { cancel(); <-done }
				return nil
			}}
		lt0, lw0 := rowLocks(ctx, raw)
		res, err := dr.run(ctx)
		if stop != nil {
			stop()
		}
		lt1, lw1 := rowLocks(ctx, raw)
		locks[withRule] = fmt.Sprintf("%s; %d row lock waits, %d ms; per lead: %s", res.shape, lw1-lw0, lt1-lt0, res.work)
		if err != nil {
			return res, err
		}
		if withRule {
			return res, allAssigned(ctx, raw, tenantID)
		}
		return res, nil
	}
	var sumNone, sumRule float64
	var ratios []float64
	for i := 0; i < pairs; i++ {
		load := loadAvg()
		order := []bool{false, true}
		if i%2 == 1 {
			order = []bool{true, false}
		}
		var none, rule drainResult
		for _, withRule := range order {
			r, err := drainOnce(withRule)
			if err != nil {
				return err
			}
			if withRule {
				rule = r
			} else {
				none = r
			}
		}
		ratio := rule.rate() / none.rate()
		ratios = append(ratios, ratio)
		sumNone += none.rate()
		sumRule += rule.rate()
		first := "none first"
		if i%2 == 1 {
			first = "rule first"
		}
		fmt.Printf("pair %d (%s, load %s): no rules %.0f leads/s (CPU per lead %s; %s); rule %.0f leads/s (CPU per lead %s; %s); rule/none %.2f\n",
			i+1, first, load, none.rate(), none.cpu, locks[false], rule.rate(), rule.cpu, locks[true], ratio)
	}
	sort.Float64s(ratios)
	fmt.Printf("rule/none: summed rates %.2f, median pair %.2f (target ≥ 0.90)\n", sumRule/sumNone, ratios[len(ratios)/2])
	return nil
}

// cmpTenant provisions a tenant with one source for a compared drain, with
// one round-robin rule among 3 users (or a fixed owner) when withRule.
func cmpTenant(ctx context.Context, a *app.App, slug string, withRule, owner bool) (tenantID, sourceID string, err error) {
	p, err := a.Tenants.Provision(ctx, tenants.ProvisionInput{Slug: slug, Name: slug, AdminEmail: "admin@" + slug + ".test", AdminPassword: "bench-password-1"})
	if err != nil {
		return "", "", err
	}
	src, _, err := a.Sources.Create(ctx, p.Tenant.ID, sources.CreateInput{Slug: "landing", Name: "Landing", Kind: kinds.Standard})
	if err != nil || !withRule {
		return p.Tenant.ID, src.ID, err
	}
	var members []string
	for _, m := range []string{"ada", "bob", "cy"} {
		u, err := a.Tenants.CreateUser(ctx, p.Tenant.ID, tenants.CreateUserInput{Email: m + "@" + slug + ".test", Name: m, Role: "staff", Password: "bench-password-1"})
		if err != nil {
			return "", "", err
		}
		members = append(members, u.ID)
	}
	rule := leads.AssignmentRule{Name: "Everyone", Strategy: leads.StrategyRoundRobin, Members: members}
	if owner {
		rule = leads.AssignmentRule{Name: "Ada", Strategy: leads.StrategyOwner, OwnerID: &members[0]}
	}
	_, err = a.Web.Leads.PutAssignment(ctx, p.Tenant.ID, leads.Assignment{Rules: []leads.AssignmentRule{rule}})
	return p.Tenant.ID, src.ID, err
}

// allAssigned fails when the rule left some of the tenant's leads without
// an owner.
func allAssigned(ctx context.Context, raw *sqlx.DB, tenantID string) error {
	var unassigned int
	if err := raw.GetContext(ctx, &unassigned, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND owner_id IS NULL`, tenantID); err != nil {
		return err
	}
	if unassigned > 0 {
		return fmt.Errorf("%d leads left unassigned by the rule", unassigned)
	}
	return nil
}

// rowLocks reads MariaDB's server-wide Innodb_row_lock_time (ms) and
// Innodb_row_lock_waits.
func rowLocks(ctx context.Context, raw *sqlx.DB) (ms, waits int64) {
	rows, err := raw.QueryContext(ctx, `SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_row_lock_time', 'Innodb_row_lock_waits')`)
	if err != nil {
		return 0, 0
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var v int64
		if rows.Scan(&name, &v) == nil {
			if name == "Innodb_row_lock_time" {
				ms = v
			} else {
				waits = v
			}
		}
	}
	return ms, waits
}

// loadAvg is the machine's 1, 5 and 15 minute load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// runAssignTogether is -assign-compare with -together: each pair's two
// drains run at the same time, each tenant's backlog queued in a Redis
// database of its own and drained by a worker of its own (a and b: two
// apps on the one MariaDB database), so both meet the same machine. On
// this shared 2-core machine the speed moves by a third from one drain to
// the next, which sequential pairs cannot tell apart from the rule's cost.
// What a pair reports: each tenant's leads made from its first processed
// delivery to the moment the first of the two drains ended, per second,
// and their ratio; which worker drains which tenant alternates pair by
// pair. Caveat: a drain that waits (for a commit, a lock) leaves the CPU
// to the other meanwhile, which a drain alone would not get back.
func runAssignTogether(ctx context.Context, a, b *app.App, raw *sqlx.DB, n, pairs, conc int, owner bool) error {
	kind := "round-robin rule among 3 users"
	if owner {
		kind = "fixed-owner rule"
	}
	fmt.Printf("assignment cost, drains side by side: %d pairs of two %d-delivery drains at once (worker concurrency %d each), without rules and with one %s\n", pairs, n, conc, kind)
	var sumNone, sumRule float64
	var ratios []float64
	for i := 0; i < pairs; i++ {
		// apps[0] drains the tenant without rules on even pairs.
		apps := []*app.App{a, b}
		if i%2 == 1 {
			apps = []*app.App{b, a}
		}
		var sides [2]drain
		for k, withRule := range []bool{false, true} {
			tenantID, sourceID, err := cmpTenant(ctx, a, fmt.Sprintf("tog-%d-%d", i, k), withRule, owner)
			if err != nil {
				return err
			}
			sides[k] = drain{raw: raw, queue: apps[k].Queue, tenantID: tenantID, sourceID: sourceID, n: n}
			now := time.Now().UTC().Truncate(time.Microsecond)
			if err := sides[k].store(ctx, drainBodies(n, now), now); err != nil {
				return err
			}
		}
		settleMariaDB(ctx, raw, time.Minute)
		load := loadAvg()
		wctx, cancel := context.WithCancel(ctx)
		var done [2]chan struct{}
		for k := range sides {
			done[k] = make(chan struct{})
			go func() { defer close(done[k]); _ = apps[k].RunWorker(wctx, conc) }()
		}
		var werr error
		for k := range sides {
			if err := waitProcessed(ctx, raw, sides[k].tenantID, 10*time.Minute); err != nil && werr == nil {
				werr = err
			}
		}
		cancel()
		<-done[0]
		<-done[1]
		if werr != nil {
			return werr
		}
		var first, last [2]time.Time
		for k := range sides {
			if err := raw.QueryRowContext(ctx, `SELECT MIN(processed_at), MAX(processed_at) FROM deliveries WHERE tenant_id = ?`, sides[k].tenantID).Scan(&first[k], &last[k]); err != nil {
				return err
			}
		}
		end := last[0]
		if last[1].Before(end) {
			end = last[1]
		}
		var rate [2]float64
		var made [2]int
		for k := range sides {
			if err := raw.GetContext(ctx, &made[k], `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND processed_at <= ?`, sides[k].tenantID, end); err != nil {
				return err
			}
			rate[k] = float64(made[k]) / max(end.Sub(first[k]), time.Millisecond).Seconds()
		}
		if err := allAssigned(ctx, raw, sides[1].tenantID); err != nil {
			return err
		}
		ratio := rate[1] / rate[0]
		ratios = append(ratios, ratio)
		sumNone += rate[0]
		sumRule += rate[1]
		fmt.Printf("pair %d (load %s): both running %s; no rules %d leads, %.0f leads/s (all in %s); rule %d leads, %.0f leads/s (all in %s); rule/none %.2f\n",
			i+1, load, end.Sub(first[0]).Round(time.Millisecond), made[0], rate[0], last[0].Sub(first[0]).Round(time.Millisecond),
			made[1], rate[1], last[1].Sub(first[1]).Round(time.Millisecond), ratio)
	}
	sort.Float64s(ratios)
	fmt.Printf("rule/none side by side: summed rates %.2f, median pair %.2f (target ≥ 0.90)\n", sumRule/sumNone, ratios[len(ratios)/2])
	return nil
}
