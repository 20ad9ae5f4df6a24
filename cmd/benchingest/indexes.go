package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/ids"
	"leadpipe/internal/leads"
)

// indexCost measures what each secondary index of the leads table costs
// the worker's upsert. One scratch database per variant, all migrated the
// same way: the real table, and the real table less one index each. Every
// round runs each variant in turn (so a slow minute of the machine weighs
// on all alike) with the worker's own statements: n new leads, then the
// same n again with a newer record (name and email changed, so the name
// and email indexes move), through leads.UpsertFromSenderBatch in
// transactions of batch records from two connections, as the worker
// runs them. A variant's cost is the MariaDB CPU per record it saves
// against the full table.
type indexCost struct {
	n, batch int
	rounds   int
	variants []indexVariant
}

type indexVariant struct {
	index    string // "" for the full table
	x        *sqlx.DB
	dsn      string
	cpu      time.Duration // MariaDB CPU over all rounds
	wall     time.Duration
	records  int
	tenantID string
}

func runIndexCost(ctx context.Context, baseDSN string, n, batch, rounds int) error {
	cfg, err := mysql.ParseDSN(baseDSN)
	if err != nil {
		return err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	open := func(suffix string) (*sqlx.DB, string, error) {
		c := cfg.Clone()
		c.DBName = cfg.DBName + suffix
		dsn := c.FormatDSN()
		x, err := db.Open(ctx, dsn)
		if err != nil {
			return nil, "", err
		}
		if err := db.Migrate(ctx, x, quiet); err != nil {
			x.Close()
			return nil, "", err
		}
		x.SetMaxOpenConns(4)
		return x, dsn, nil
	}
	full, fullDSN, err := open("_all")
	if err != nil {
		return err
	}
	var names []string
	if err := full.SelectContext(ctx, &names, `SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'leads' AND INDEX_NAME NOT IN ('PRIMARY', 'uq_leads_source_ref')`); err != nil {
		return err
	}
	sort.Strings(names)
	ic := &indexCost{n: n, batch: batch, rounds: rounds}
	ic.variants = append(ic.variants, indexVariant{x: full, dsn: fullDSN})
	defer func() {
		for _, v := range ic.variants {
			v.x.Close()
			_ = db.DropDatabase(context.Background(), v.dsn)
		}
	}()
	for i, name := range names {
		x, dsn, err := open(fmt.Sprintf("_x%d", i))
		if err != nil {
			return err
		}
		ic.variants = append(ic.variants, indexVariant{index: name, x: x, dsn: dsn})
		if _, err := x.ExecContext(ctx, `ALTER TABLE leads DROP KEY `+name); err != nil {
			return err
		}
	}
	fmt.Printf("leads index cost: %d variants (the full table, then each of its %d secondary indexes left out), %d rounds of %d new + %d updated records, transactions of %d, 2 connections\n",
		len(ic.variants), len(names), rounds, n, n, batch)
	// Each round starts one variant further on (no variant always runs
	// first), and each run starts once InnoDB has written back the last
	// one's pages (settleMariaDB): the page cleaner's work on one variant's
	// writes is not charged to the next.
	for r := 0; r < rounds; r++ {
		for k := range ic.variants {
			v := &ic.variants[(r+k)%len(ic.variants)]
			settleMariaDB(ctx, full, time.Minute)
			if err := ic.run(ctx, v, r); err != nil {
				return err
			}
		}
	}
	base := ic.variants[0]
	basePer := base.cpu / time.Duration(max(base.records, 1))
	fmt.Printf("%-28s %12s %16s %14s\n", "leads table", "records/s", "MariaDB CPU/rec", "index costs")
	for _, v := range ic.variants {
		per := v.cpu / time.Duration(max(v.records, 1))
		name, cost := "all indexes", ""
		if v.index != "" {
			name = "without " + v.index
			cost = fmt.Sprintf("%+.1f µs (%.0f %%)", float64(basePer-per)/1e3, 100*float64(basePer-per)/float64(max(basePer, 1)))
		}
		fmt.Printf("%-40s %9.0f %12s %22s\n", name, float64(v.records)/v.wall.Seconds(), per.Round(100*time.Nanosecond), cost)
	}
	return nil
}

// run writes round r's records into one variant and adds its MariaDB CPU.
func (ic *indexCost) run(ctx context.Context, v *indexVariant, r int) error {
	if v.tenantID == "" {
		v.tenantID = ids.New()
	}
	sourceID := "S0000000000000000000000000"
	now := time.Now().UTC().Truncate(time.Microsecond)
	rec := func(i int, pass int) leads.BatchRecord {
		key := fmt.Sprintf("r%d_lead_%d", r, i)
		return leads.BatchRecord{SourceID: sourceID, SenderRecord: leads.SenderRecord{SourceRef: key,
			Email:   fmt.Sprintf("p%d.%s@example.com", pass, key),
			Name:    fmt.Sprintf("Lead %d Pass %d", i, pass),
			Company: "Bench", Payload: []byte(fmt.Sprintf(`{"n":%d,"pass":%d}`, i, pass)), Sightings: 1,
			OrderKey: leads.OrderKey(now.Add(time.Duration(pass)*time.Second), ids.New())}}
	}
	cpu0 := mariadbCPU()
	t0 := time.Now()
	for pass := 0; pass < 2; pass++ {
		work := make(chan int)
		errs := make(chan error, 2)
		var wg sync.WaitGroup
		for c := 0; c < 2; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for from := range work {
					recs := make([]leads.BatchRecord, 0, ic.batch)
					for i := from; i < min(from+ic.batch, ic.n); i++ {
						recs = append(recs, rec(i, pass))
					}
					if err := db.InTx(ctx, v.x, func(tx *sqlx.Tx) error {
						_, err := leads.UpsertFromSenderBatch(ctx, tx, v.tenantID, recs, now)
						return err
					}); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		for from := 0; from < ic.n; from += ic.batch {
			work <- from
		}
		close(work)
		wg.Wait()
		select {
		case err := <-errs:
			return err
		default:
		}
	}
	v.wall += time.Since(t0)
	v.cpu += mariadbCPU() - cpu0
	v.records += 2 * ic.n
	return nil
}

// mariadbCPU is the CPU time of the run's MariaDB server (0 if it is not
// local).
func mariadbCPU() time.Duration {
	for _, s := range servers {
		if s.name == "mariadbd" {
			return procCPU(s.pid())
		}
	}
	return 0
}
