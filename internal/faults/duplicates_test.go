//go:build faults

package faults

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"leadpipe/internal/webhooks"
)

// Duplicates answered from the server's memory across a clean shutdown
// and a kill -9 (docs/ARCHITECTURE.md, "Duplicates in a retry storm"): every duplicate's
// answer names its original, which is stored; after a clean shutdown
// every count is exact; a crash (kill -9) loses at most the counts held in
// memory, those of the duplicates answered in the last hold window
// (webhooks.DuplicateHold, 5 s) before it, never a delivery acknowledged
// in that window nor an original; and once more duplicates come,
// times_seen equals 1 + dup_count again for every lead.
func TestDuplicatesAcrossAServerCrash(t *testing.T) {
	s, h := startWithTenant(t, "leadpipe_dupcrash", "dupcrash")
	const msgs = 40
	sent := map[string]string{} // msg → natural key
	orig := map[string]string{} // msg → the delivery id its first answer named
	for i := 0; i < msgs; i++ {
		msg, ref := fmt.Sprintf("dup-%d", i), fmt.Sprintf("ref-%d", i)
		sent[msg], orig[msg] = ref, s.deliverTo(h, msg, ref)
	}
	s.waitProcessed(h.tenantID)

	// storm sends every message times more, from 8 senders at once, and
	// checks that each answer names the message's original.
	storm := func(times int) {
		fanOut(times*msgs, func(i int) {
			msg := fmt.Sprintf("dup-%d", i%msgs)
			if id := s.deliverTo(h, msg, sent[msg]); id != orig[msg] {
				t.Errorf("a duplicate of %s was answered %q, its original is %s", msg, id, orig[msg])
			}
		})
	}
	counts := func() map[string]int {
		// Counts a server logged are folded into deliveries by the worker
		// every second (webhooks.DupFolder): wait for the log to empty.
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			var logged int
			if err := s.check.Get(&logged, `SELECT COUNT(*) FROM delivery_dup_log WHERE tenant_id = ?`, h.tenantID); err != nil {
				t.Fatal(err)
			}
			if logged == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the worker left %d duplicate log rows unfolded for 15 s", logged)
			}
		}
		var rows []struct {
			DeliveryID string `db:"delivery_id"`
			ID         string `db:"id"`
			Dups       int    `db:"dup_count"`
		}
		if err := s.check.Select(&rows, `SELECT delivery_id, id, dup_count FROM deliveries WHERE tenant_id = ? AND delivery_id LIKE 'dup-%'`, h.tenantID); err != nil {
			t.Fatal(err)
		}
		if len(rows) != msgs {
			t.Fatalf("%d deliveries stored, %d sent", len(rows), msgs)
		}
		out := map[string]int{}
		for _, r := range rows {
			if orig[r.DeliveryID] != r.ID {
				t.Fatalf("delivery %s stored as %s, answered as %s", r.DeliveryID, r.ID, orig[r.DeliveryID])
			}
			out[r.DeliveryID] = r.Dups
		}
		return out
	}
	restart := func(sig syscall.Signal) {
		s.server.signal(sig)
		s.server.start(t)
		waitReady(t, s.base, 90*time.Second)
	}

	// A clean shutdown: every count exact.
	storm(10)
	restart(syscall.SIGTERM)
	for msg, n := range counts() {
		if n != 10 {
			t.Errorf("after a clean shutdown %s has dup_count %d, want 10", msg, n)
		}
	}

	// kill -9: what was answered more than a hold window before it is
	// counted; what came in the last window may be lost, nothing more. New
	// deliveries acknowledged inside that window, beside the duplicates,
	// are all stored: only counts are ever held in memory.
	storm(5)
	time.Sleep(webhooks.DuplicateHold + time.Second) // the window of the 5 is written
	windowStart := time.Now()
	fresh := map[string]string{} // new msg → the delivery id acknowledged
	var freshMu sync.Mutex
	var freshWG sync.WaitGroup
	freshWG.Add(1)
	go func() { // new deliveries inside the window, beside the storm
		defer freshWG.Done()
		for i := 0; i < 10; i++ {
			msg := fmt.Sprintf("new-%d", i)
			id := s.deliverTo(h, msg, fmt.Sprintf("new-ref-%d", i))
			freshMu.Lock()
			fresh[msg] = id
			freshMu.Unlock()
		}
	}()
	storm(3)
	freshWG.Wait()
	if held := time.Since(windowStart); held >= webhooks.DuplicateHold {
		t.Logf("the last storm took %s, longer than the hold: some of its counts were written before the kill", held)
	}
	restart(syscall.SIGKILL)
	lost := 0
	for msg, n := range counts() {
		if n < 15 || n > 18 {
			t.Errorf("after kill -9 %s has dup_count %d, want 15 (all but the last window's) to 18", msg, n)
		}
		lost += 18 - n
	}
	t.Logf("kill -9 lost %d of the %d duplicate counts answered in the last hold window before it", lost, 3*msgs)
	for msg, id := range fresh {
		var stored []string
		if err := s.check.Select(&stored, `SELECT id FROM deliveries WHERE tenant_id = ? AND delivery_id = ?`, h.tenantID, msg); err != nil {
			t.Fatal(err)
		}
		if len(stored) != 1 || stored[0] != id {
			t.Errorf("new delivery %s acknowledged as %s in the last window before kill -9: stored %v", msg, id, stored)
		}
	}

	// The new process knows none of them: the duplicates take the claim,
	// then memory; a clean shutdown makes the counts exact again, and the
	// sightings bring times_seen to 1 + dup_count.
	before := counts()
	storm(2)
	restart(syscall.SIGTERM)
	after := counts()
	for msg, n := range after {
		if n != before[msg]+2 {
			t.Errorf("%s: dup_count %d after 2 more duplicates and a clean shutdown, want %d", msg, n, before[msg]+2)
		}
	}
	s.waitProcessed(h.tenantID)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var wrong []string
		var leads []struct {
			Ref       string `db:"source_ref"`
			TimesSeen int    `db:"times_seen"`
		}
		if err := s.check.Select(&leads, `SELECT source_ref, times_seen FROM leads WHERE tenant_id = ? AND source_ref LIKE 'ref-%'`, h.tenantID); err != nil {
			t.Fatal(err)
		}
		for _, l := range leads {
			var msg string
			_, _ = fmt.Sscanf(l.Ref, "ref-%s", &msg)
			if want := 1 + after["dup-"+msg]; l.TimesSeen != want {
				wrong = append(wrong, fmt.Sprintf("lead %s times_seen %d, want %d", l.Ref, l.TimesSeen, want))
			}
		}
		if len(leads) != msgs {
			wrong = append(wrong, fmt.Sprintf("%d leads for %d natural keys", len(leads), msgs))
		}
		if len(wrong) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, w := range wrong {
				t.Error(w)
			}
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
}
