package webhooks

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"leadpipe/internal/dbtest"
	"leadpipe/internal/ids"
)

func TestDupLogEntriesRoundTrip(t *testing.T) {
	first := time.Date(2026, 12, 7, 10, 0, 0, 123456000, time.UTC)
	in := map[tallyKey]tallied{
		{tenantID: "T", id: ids.New(), sourceID: ids.New(), deliveryID: "d-1"}:                     {n: 3, first: first, last: first.Add(4 * time.Second)},
		{tenantID: "T", id: ids.New(), sourceID: ids.New(), deliveryID: string(make([]byte, 191))}: {n: 1, first: first, last: first},
	}
	var body []byte
	for _, k := range sortedTallyKeys(in) {
		body = appendLogEntry(body, k, in[k])
	}
	out := map[tallyKey]tallied{}
	if err := readLogEntries("T", body, out); err != nil {
		t.Fatal(err)
	}
	// A second row of the same originals sums into the first.
	if err := readLogEntries("T", body, out); err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d entries read, %d written", len(out), len(in))
	}
	for k, w := range in {
		g := out[k]
		if g.n != 2*w.n || !g.first.Equal(w.first) || !g.last.Equal(w.last) {
			t.Fatalf("%v: read %+v, want n %d first %s last %s", k, g, 2*w.n, w.first, w.last)
		}
	}
	// A body cut anywhere but between entries is an error, not a wrong count.
	keys := sortedTallyKeys(in)
	boundary := len(appendLogEntry(nil, keys[0], in[keys[0]]))
	for cut := 1; cut < len(body); cut++ {
		err := readLogEntries("T", body[:cut], map[tallyKey]tallied{})
		if (err == nil) != (cut == boundary) {
			t.Fatalf("a body cut at %d of %d (entry boundary %d) read with error %v", cut, len(body), boundary, err)
		}
	}
}

// Servers log duplicate counts while several workers fold at once: every
// count lands on its original exactly once, and the log ends empty.
func TestConcurrentFoldsCountEachDuplicateOnce(t *testing.T) {
	x, _ := dbtest.New(t, "dup_fold")
	ctx := context.Background()
	tenant, source := ids.New(), ids.New()
	now := time.Now().UTC().Truncate(time.Microsecond)
	const originals, servers, rounds, folders = 60, 4, 6, 8
	origs := make([]Delivery, originals)
	claim := &Claimer{DB: x, FlushEvery: time.Hour}
	for i := range origs {
		origs[i] = testDelivery(tenant, source, fmt.Sprintf("d-%d", i), now)
		if isNew, _, err := claim.Claim(ctx, origs[i]); err != nil || !isNew {
			t.Fatalf("claim %d: %v %v", i, isNew, err)
		}
	}
	var hinted atomic.Int64
	stop := make(chan struct{})
	var foldWG sync.WaitGroup
	for f := 0; f < folders; f++ {
		foldWG.Add(1)
		go func() {
			defer foldWG.Done()
			fd := &DupFolder{DB: x, OnDuplicates: func(r []DeliveryRef) { hinted.Add(int64(len(r))) }}
			for {
				if err := fd.Fold(ctx); err != nil {
					t.Errorf("fold: %v", err)
					return
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	var sendWG sync.WaitGroup
	for s := 0; s < servers; s++ {
		sendWG.Add(1)
		go func(s int) {
			defer sendWG.Done()
			c := &Claimer{DB: x, FlushEvery: time.Hour}
			c.start()
			for _, o := range origs {
				c.known.put(tenant, source, o.DeliveryID, o.ID)
			}
			for r := 0; r < rounds; r++ {
				for i, o := range origs {
					for k := 0; k <= i%3; k++ { // 1, 2 or 3 duplicates of each original per round
						if _, ok := c.Answer(tenant, source, o.DeliveryID, now.Add(time.Duration(r*10+k+s)*time.Second)); !ok {
							t.Errorf("server %d: %s not tallied", s, o.DeliveryID)
						}
					}
				}
				if err := c.flushTally(ctx); err != nil {
					t.Errorf("server %d: log: %v", s, err)
				}
			}
		}(s)
	}
	sendWG.Wait()
	close(stop)
	foldWG.Wait()
	if err := (&DupFolder{DB: x}).Fold(ctx); err != nil {
		t.Fatal(err)
	}
	for i, o := range origs {
		want := servers * rounds * (1 + i%3)
		var got struct {
			N    int       `db:"dup_count"`
			Last time.Time `db:"dup_last_at"`
		}
		if err := x.Get(&got, `SELECT dup_count, dup_last_at FROM deliveries WHERE tenant_id = ? AND id = ?`, tenant, o.ID); err != nil {
			t.Fatal(err)
		}
		wantLast := now.Add(time.Duration((rounds-1)*10+i%3+servers-1) * time.Second)
		if got.N != want || !got.Last.Equal(wantLast) {
			t.Fatalf("%s: dup_count %d last %s, want %d and %s", o.DeliveryID, got.N, got.Last, want, wantLast)
		}
	}
	var left int
	if err := x.Get(&left, `SELECT COUNT(*) FROM delivery_dup_log`); err != nil || left != 0 {
		t.Fatalf("%d log rows left (%v)", left, err)
	}
	if hinted.Load() != 0 {
		t.Fatalf("%d originals hinted, none is processed into a lead", hinted.Load())
	}
}
