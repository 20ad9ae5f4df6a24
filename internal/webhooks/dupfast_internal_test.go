package webhooks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/dbtest"
	"leadpipe/internal/ids"
)

// Only a committed claim is remembered: a row the database refused, or a
// batch that never reached it, leaves nothing a duplicate could be
// answered from.
func TestOnlyCommittedClaimsAreKnown(t *testing.T) {
	x, _ := dbtest.New(t, "fast_committed")
	c := &Claimer{DB: x}
	tenant, source := ids.New(), ids.New()
	now := time.Now().UTC()
	d := func(did string) Delivery {
		return testDelivery(tenant, source, did, now)
	}
	if _, _, err := c.Claim(context.Background(), d("bad-\xff\xfe")); err == nil {
		t.Fatal("the database stored a delivery id that is not UTF-8")
	}
	if _, ok := c.known.get(tenant, source, "bad-\xff\xfe"); ok {
		t.Fatal("a refused claim is known")
	}
	good := d("good")
	if isNew, _, err := c.Claim(context.Background(), good); err != nil || !isNew {
		t.Fatalf("claim: %v %v", isNew, err)
	}
	if id, ok := c.known.get(tenant, source, "good"); !ok || id != good.ID {
		t.Fatalf("a committed claim is not known: %q", id)
	}

	// A claimer whose database is gone: the claim fails, nothing is known.
	y, _ := dbtest.New(t, "fast_closed")
	y.Close()
	gone := &Claimer{DB: y}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := gone.Claim(ctx, d("never")); err == nil {
		t.Fatal("claim on a closed database succeeded")
	}
	if _, ok := gone.known.get(tenant, source, "never"); ok {
		t.Fatal("a failed claim is known")
	}
}

// A flush that fails keeps its counts and stops the fast path until a
// flush works; then the counts are exact.
func TestFailedFlushKeepsCountsAndStopsTheFastPath(t *testing.T) {
	x, _ := dbtest.New(t, "fast_flush")
	c := &Claimer{DB: x, FlushEvery: time.Hour}
	tenant, source := ids.New(), ids.New()
	now := time.Now().UTC().Truncate(time.Microsecond)
	orig := testDelivery(tenant, source, "d1", now)
	if _, _, err := c.Claim(context.Background(), orig); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if id, ok := c.Answer(tenant, source, "d1", now.Add(time.Duration(i)*time.Second)); !ok || id != orig.ID {
			t.Fatalf("answer %d: %q %v", i, id, ok)
		}
	}
	y, _ := dbtest.New(t, "fast_flush_closed")
	y.Close()
	c.DB = y
	if err := c.FlushDuplicates(context.Background()); err == nil {
		t.Fatal("flush on a closed database succeeded")
	}
	if id, ok := c.Answer(tenant, source, "d1", now); ok || id != orig.ID {
		t.Fatalf("while flushes fail the fast path must refuse (and name the original for the claim): %q %v", id, ok)
	}
	c.DB = x
	if err := c.FlushDuplicates(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got struct {
		N           int       `db:"dup_count"`
		First, Last time.Time `db:"dup_first_at"`
	}
	if err := x.QueryRowx(`SELECT dup_count, dup_first_at, dup_last_at FROM deliveries WHERE tenant_id = ? AND id = ?`, tenant, orig.ID).
		Scan(&got.N, &got.First, &got.Last); err != nil {
		t.Fatal(err)
	}
	if got.N != 5 || !got.First.Equal(now.Add(time.Second)) || !got.Last.Equal(now.Add(5*time.Second)) {
		t.Fatalf("after the failed flush: count %d first %s last %s, want 5, +1s, +5s", got.N, got.First, got.Last)
	}
	if _, ok := c.Answer(tenant, source, "d1", now); !ok {
		t.Fatal("the fast path did not come back after a flush worked")
	}
}

// Memory stays within the byte bound: the known ids rotate generations,
// the tally refuses what does not fit (those duplicates take the claim).
func TestFastPathMemoryIsBounded(t *testing.T) {
	var k knownIDs
	k.init(64 << 10)
	tenant, source := ids.New(), ids.New()
	for i := 0; i < 10000; i++ {
		k.put(tenant, source, fmt.Sprintf("delivery-%06d", i), ids.New())
	}
	used := int64(0)
	for key, v := range k.young {
		used += int64(len(key) + len(v) + entryOverhead)
	}
	for key, v := range k.old {
		used += int64(len(key) + len(v) + entryOverhead)
	}
	if used > 64<<10 {
		t.Fatalf("known ids hold %d bytes, bound %d", used, 64<<10)
	}
	if _, ok := k.get(tenant, source, "delivery-009999"); !ok {
		t.Fatal("the newest id was forgotten")
	}
	var tl tally
	tl.init(4 << 10)
	took := 0
	for i := 0; i < 1000; i++ {
		if tl.add(tenant, source, "d", ids.New(), time.Now()) == tallyOK {
			took++
		}
	}
	if took == 0 || took*(26+26+26+1+entryOverhead) > 4<<10 {
		t.Fatalf("the tally took %d originals in 4 KiB", took)
	}
	// A known original the tally cannot take is named for the claim, and
	// the full tally is written at once, not at the tick (an hour here):
	// the hold lasts up to DuplicateHold or until the memory bound,
	// whichever comes first.
	x, _ := dbtest.New(t, "fast_bound")
	origA, origB := ids.New(), ids.New()
	c := &Claimer{DB: x, Memory: 8 * (26 + 26 + 1 + 26 + entryOverhead), FlushEvery: time.Hour} // room for one tallied original
	c.start()
	c.known.put(tenant, source, "a", origA)
	c.known.put(tenant, source, "b", origB)
	if _, ok := c.Answer(tenant, source, "a", time.Now()); !ok {
		t.Fatal("the first original was not tallied")
	}
	if id, ok := c.Answer(tenant, source, "b", time.Now()); ok || id != origB {
		t.Fatalf("a full tally answered %q %v, want the claim path with the original", id, ok)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var n int
		// The early flush logs the count (duplog.go); the fold moves it
		// onto its delivery.
		err := x.Get(&n, `SELECT IFNULL(SUM(dups), 0) FROM delivery_dup_log WHERE tenant_id = ?`, tenant)
		if err == nil && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the full tally was not written before the tick: %d %v", n, err)
		}
	}
	if _, ok := c.Answer(tenant, source, "b", time.Now()); !ok {
		t.Fatal("after the early flush the tally did not take the next original")
	}
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The original's row is gone here (never stored): the fold keeps its
	// counts on a failed row in its place, as the claim does.
	var n int
	if err := x.Get(&n, `SELECT dup_count FROM deliveries WHERE tenant_id = ? AND id = ?`, tenant, origA); err != nil || n != 1 {
		t.Fatalf("after Shutdown's fold the first original has dup_count %d (%v), want 1", n, err)
	}
	if err := x.Get(&n, `SELECT COUNT(*) FROM delivery_dup_log WHERE tenant_id = ?`, tenant); err != nil || n != 0 {
		t.Fatalf("%d log rows left after the fold (%v)", n, err)
	}
}

// The flush hints Sightings only of originals whose lead's times_seen is
// behind: processed into a lead, dup_count above dups_counted. Duplicates
// of a delivery not yet processed cost no sightings work (the worker adds
// 1 + dup_count when it makes the lead), and a vanished original stored
// failed is no hint either. Both ways of asking: the statement's RETURNING
// (MariaDB) and the read after it (MySQL, forced here).
func TestFlushHintsOnlyProcessedOriginals(t *testing.T) {
	x, _ := dbtest.New(t, "fast_hints")
	for _, flavour := range []int32{0, 2} {
		t.Run(map[int32]string{0: "returning", 2: "read after"}[flavour], func(t *testing.T) {
			testFlushHints(t, x, flavour)
		})
	}
}

func testFlushHints(t *testing.T, x *sqlx.DB, flavour int32) {
	var mu sync.Mutex
	var hinted []DeliveryRef
	c := &Claimer{DB: x, FlushEvery: time.Hour, OnDuplicates: func(refs []DeliveryRef) {
		mu.Lock()
		hinted = append(hinted, refs...)
		mu.Unlock()
	}}
	c.start()
	c.fold.flavour.v.Store(flavour)
	tenant, source := ids.New(), ids.New()
	now := time.Now().UTC().Truncate(time.Microsecond)
	claim := func(did string) Delivery {
		d := testDelivery(tenant, source, did, now)
		if isNew, _, err := c.Claim(context.Background(), d); err != nil || !isNew {
			t.Fatalf("claim %s: %v %v", did, isNew, err)
		}
		return d
	}
	received, processed, counted := claim("received"), claim("processed"), claim("counted")
	// processed: made into a lead, no duplicate counted yet; counted: its
	// lead already holds its one earlier duplicate.
	if _, err := x.Exec(`UPDATE deliveries SET state = 'processed', lead_id = ? WHERE tenant_id = ? AND id = ?`, ids.New(), tenant, processed.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Exec(`UPDATE deliveries SET state = 'processed', lead_id = ?, dup_count = 1, dups_counted = 1 WHERE tenant_id = ? AND id = ?`, ids.New(), tenant, counted.ID); err != nil {
		t.Fatal(err)
	}
	vanished := ids.New()
	c.known.put(tenant, source, "vanished", vanished) // its row is gone (a deleted tenant's)
	for _, did := range []string{"received", "processed", "counted", "vanished", "received"} {
		if _, ok := c.Answer(tenant, source, did, now.Add(time.Second)); !ok {
			t.Fatalf("%s not tallied", did)
		}
	}
	if err := c.FlushDuplicates(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := slices.Clone(hinted)
	mu.Unlock()
	slices.SortFunc(got, func(a, b DeliveryRef) int { return strings.Compare(a.ID, b.ID) })
	want := []DeliveryRef{{tenant, processed.ID}, {tenant, counted.ID}}
	slices.SortFunc(want, func(a, b DeliveryRef) int { return strings.Compare(a.ID, b.ID) })
	if !slices.Equal(got, want) {
		t.Fatalf("hinted %v, want the two processed originals %v", got, want)
	}
	for id, n := range map[string]int{received.ID: 2, processed.ID: 1, counted.ID: 2, vanished: 1} {
		var dups int
		if err := x.Get(&dups, `SELECT dup_count FROM deliveries WHERE tenant_id = ? AND id = ?`, tenant, id); err != nil || dups != n {
			t.Errorf("%s: dup_count %d (%v), want %d", id, dups, err, n)
		}
	}
	var stored struct {
		State     string `db:"state"`
		LastError string `db:"last_error"`
	}
	if err := x.Get(&stored, `SELECT state, last_error FROM deliveries WHERE tenant_id = ? AND id = ?`, tenant, vanished); err != nil ||
		stored.State != "failed" || stored.LastError != vanishedOriginal {
		t.Fatalf("the vanished original is %+v (%v), want stored failed", stored, err)
	}
	if want := map[int32]int32{0: 1, 2: 2}[flavour]; c.fold.flavour.v.Load() != want {
		t.Fatalf("flavour %d, want %d", c.fold.flavour.v.Load(), want)
	}
}
