package monitor_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"leadpipe/internal/dbtest"
	"leadpipe/internal/ids"
	"leadpipe/internal/monitor"
)

var t0 = time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)

func sumBuckets(bs []monitor.Bucket) (del, dup, rej int64) {
	for _, b := range bs {
		del += b.Deliveries
		dup += b.Duplicates
		rej += b.Rejected
	}
	return
}

// 16 goroutines count concurrently through two recorders (two processes)
// that flush into the same rows while the counting goes on: every
// increment arrives exactly once, in every table.
func TestRecorderConcurrentAddsAreExact(t *testing.T) {
	d, _ := dbtest.New(t, "monitor_rec")
	recs := []*monitor.Recorder{monitor.NewRecorder(d, nil), monitor.NewRecorder(d, nil)}
	svc := monitor.NewService(d, nil, nil, recs[0], nil, monitor.NoFirstResponses{}, nil, nil)
	tenant, src := ids.New(), ids.New()
	const workers, perWorker = 16, 5000

	ctx := context.Background()
	stop := make(chan struct{})
	var flushes sync.WaitGroup
	for _, r := range recs {
		flushes.Add(1)
		go func() { // flush continuously, racing the adds and the other recorder
			defer flushes.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := r.Flush(ctx); err != nil {
					t.Errorf("flush: %v", err)
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	var wantDel, wantDup, wantRej atomic.Int64
	_ = racing(workers, func(w int) error {
		r := recs[w%2]
		for i := range perWorker {
			at := t0.Add(time.Duration((w*perWorker+i)%180) * time.Minute) // 3 hours of minutes
			r.Add(tenant, src, monitor.Deliveries, 1, at)
			wantDel.Add(1)
			if i%7 == 0 {
				r.Add(tenant, src, monitor.Duplicates, 1, at)
				wantDup.Add(1)
			}
			if i%50 == 0 {
				r.Add(tenant, src, monitor.Rejected, 1, at)
				wantRej.Add(1)
			}
		}
		return nil
	})
	close(stop)
	flushes.Wait()
	for _, r := range recs {
		if err := r.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}

	for _, step := range []time.Duration{time.Minute, 5 * time.Minute, time.Hour, 24 * time.Hour} {
		bs, err := svc.Stats(ctx, tenant, src, t0.Add(-time.Hour), t0.Add(24*time.Hour), step)
		if err != nil {
			t.Fatal(err)
		}
		del, dup, rej := sumBuckets(bs)
		if del != wantDel.Load() || dup != wantDup.Load() || rej != wantRej.Load() {
			t.Fatalf("step %s: got %d/%d/%d want %d/%d/%d", step, del, dup, rej, wantDel.Load(), wantDup.Load(), wantRej.Load())
		}
	}
}

// A failed flush keeps the increments and the next one writes them once:
// the three tables are written in one transaction.
func TestRecorderFlushFailureRetries(t *testing.T) {
	d, _ := dbtest.New(t, "monitor_fail")
	ctx := context.Background()
	rec := monitor.NewRecorder(d, nil)
	svc := monitor.NewService(d, nil, nil, rec, nil, monitor.NoFirstResponses{}, nil, nil)
	tenant, src := ids.New(), ids.New()

	rec.Add(tenant, src, monitor.Deliveries, 10, t0)
	// Break the last table written, so the minute and hour upserts have
	// already run when the transaction fails.
	if _, err := d.ExecContext(ctx, `RENAME TABLE source_stats_day TO source_stats_day_away`); err != nil {
		t.Fatal(err)
	}
	if err := rec.Flush(ctx); err == nil {
		t.Fatal("flush should fail without the daily table")
	}
	rec.Add(tenant, src, monitor.Deliveries, 5, t0.Add(time.Minute))
	if _, err := d.ExecContext(ctx, `RENAME TABLE source_stats_day_away TO source_stats_day`); err != nil {
		t.Fatal(err)
	}
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, step := range []time.Duration{time.Minute, time.Hour, 24 * time.Hour} {
		bs, err := svc.Stats(ctx, tenant, src, t0, t0.Add(24*time.Hour), step)
		if err != nil {
			t.Fatal(err)
		}
		if del, _, _ := sumBuckets(bs); del != 15 {
			t.Fatalf("step %s: %d deliveries, want 15", step, del)
		}
	}
	if rec.Pending() != 0 {
		t.Fatalf("pending after a good flush: %d", rec.Pending())
	}
}

// While MySQL is away, memory stays bounded: the oldest minutes go first.
func TestRecorderCapsPendingMemory(t *testing.T) {
	d, _ := dbtest.New(t, "monitor_cap")
	ctx := context.Background()
	rec := monitor.NewRecorder(d, nil)
	rec.MaxPendingKeys = 10
	tenant, src := ids.New(), ids.New()
	for i := range 25 {
		rec.Add(tenant, src, monitor.Deliveries, 1, t0.Add(time.Duration(i)*time.Minute))
	}
	if _, err := d.ExecContext(ctx, `RENAME TABLE source_stats_minute TO source_stats_minute_away`); err != nil {
		t.Fatal(err)
	}
	defer d.ExecContext(ctx, `RENAME TABLE source_stats_minute_away TO source_stats_minute`) //nolint:errcheck
	if err := rec.Flush(ctx); err == nil {
		t.Fatal("flush should fail")
	}
	if n := rec.Pending(); n != 10 {
		t.Fatalf("pending %d, want the cap 10", n)
	}
}

func TestStatsValidation(t *testing.T) {
	cases := []struct {
		name     string
		from, to time.Time
		step     time.Duration
		field    string
	}{
		{"ok", t0, t0.Add(time.Hour), time.Minute, ""},
		{"from after to", t0.Add(time.Hour), t0, time.Minute, "from"},
		{"equal", t0, t0, time.Minute, "from"},
		{"step too small", t0, t0.Add(time.Hour), 30 * time.Second, "step"},
		{"step not minutes", t0, t0.Add(time.Hour), 90 * time.Second, "step"},
		{"too many buckets", t0, t0.Add(2001 * time.Minute), time.Minute, "step"},
		{"2000 buckets", t0, t0.Add(2000 * time.Minute), time.Minute, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := monitor.ValidateRange(c.from, c.to, c.step)
			if c.field == "" && f != nil {
				t.Fatalf("unexpected %v", f)
			}
			if c.field != "" && f[c.field] == "" {
				t.Fatalf("want field %s, got %v", c.field, f)
			}
		})
	}
}

// Buckets are aligned to the step, empty ones are zeros, the rate is
// duplicates/deliveries, whichever table answers.
func TestStatsBucketsAlignedWithZeros(t *testing.T) {
	d, _ := dbtest.New(t, "monitor_stats")
	ctx := context.Background()
	rec := monitor.NewRecorder(d, nil)
	svc := monitor.NewService(d, nil, nil, rec, nil, monitor.NoFirstResponses{}, nil, nil)
	tenant, src, other := ids.New(), ids.New(), ids.New()
	rec.Add(tenant, src, monitor.Deliveries, 40, t0.Add(7*time.Minute))
	rec.Add(tenant, src, monitor.Duplicates, 10, t0.Add(7*time.Minute))
	rec.Add(tenant, src, monitor.DeadLetters, 2, t0.Add(8*time.Minute))
	rec.Add(tenant, src, monitor.ReconcileNew, 3, t0.Add(9*time.Minute))
	rec.Add(tenant, src, monitor.ReconcileKnown, 4, t0.Add(9*time.Minute))
	rec.Add(tenant, other, monitor.Deliveries, 99, t0.Add(7*time.Minute)) // another source
	rec.Add(ids.New(), src, monitor.Deliveries, 99, t0.Add(7*time.Minute))
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	bs, err := svc.Stats(ctx, tenant, src, t0.Add(2*time.Minute), t0.Add(20*time.Minute), 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 4 || !bs[0].T.Equal(t0) || !bs[3].T.Equal(t0.Add(15*time.Minute)) {
		t.Fatalf("buckets %+v", bs)
	}
	want := monitor.Bucket{T: t0.Add(5 * time.Minute), Deliveries: 40, Duplicates: 10, DuplicateRate: 0.25,
		DeadLetters: 2, ReconcileNew: 3, ReconcileKnown: 4}
	if bs[1] != want || bs[0].Deliveries != 0 || bs[2].Deliveries != 0 || bs[0].DuplicateRate != 0 {
		t.Fatalf("got %+v", bs)
	}
	day, err := svc.Stats(ctx, tenant, src, t0.Add(-48*time.Hour), t0.Add(time.Hour), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(day) != 3 || day[2].Deliveries != 40 || !day[2].T.Equal(t0) {
		t.Fatalf("daily %+v", day)
	}
	// Many per-minute rows per bucket: MySQL groups them.
	long, err := svc.Stats(ctx, tenant, src, t0.Add(-20*24*time.Hour), t0.Add(time.Hour), 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if last := long[len(long)-2]; len(long) != 962 || last.Deliveries != 40 || last.Duplicates != 10 || !last.T.Equal(t0) {
		t.Fatalf("30-minute buckets: %d, %+v", len(long), long[len(long)-2:])
	}
}
