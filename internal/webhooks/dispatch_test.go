package webhooks_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/hibiken/asynq"

	"leadpipe/internal/apptest"
	"leadpipe/internal/ids"
	"leadpipe/internal/jobs"
	"leadpipe/internal/webhooks"
)

// The dispatcher, fed deliveries by many requests at once and with a
// buffer small enough to overflow (the callers then enqueue themselves),
// queues each delivery in exactly one batch task of its tenant, never
// more than MaxBatch to a task; Flush leaves nothing behind, and a
// dispatch after Flush is still enqueued.
func TestDispatcherQueuesEachDeliveryOnce(t *testing.T) {
	e := apptest.New(t, "hooks_dispatch", apptest.Options{RedisDB: apptest.RedisWebhooks})
	d := &webhooks.Dispatcher{Queue: e.App.Queue, Log: e.App.Log, Workers: 3, Buffer: 4, MaxBatch: 16}
	tenants := []string{ids.New(), ids.New()}
	rowIDs := make([]string, 240)
	tenantOf := map[string]string{}
	for i := range rowIDs {
		rowIDs[i] = ids.New()
		tenantOf[rowIDs[i]] = tenants[i%2]
	}
	var wg sync.WaitGroup
	for g := 0; g < 12; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(rowIDs); i += 12 {
				d.Dispatch(tenantOf[rowIDs[i]], []string{rowIDs[i]})
			}
		}()
	}
	wg.Wait()
	d.Flush(context.Background())
	late := ids.New()
	tenantOf[late] = tenants[0]
	d.Dispatch(tenants[0], []string{late})

	insp := asynq.NewInspectorFromRedisClient(e.App.RDB)
	pending, err := insp.ListPendingTasks(jobs.QueueCritical, asynq.PageSize(1000))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, ti := range pending {
		if ti.Type != webhooks.TypeProcessBatch {
			t.Fatalf("task type %s, want %s", ti.Type, webhooks.TypeProcessBatch)
		}
		var b webhooks.BatchPayload
		if err := json.Unmarshal(ti.Payload, &b); err != nil {
			t.Fatal(err)
		}
		if len(b.IDs) == 0 || len(b.IDs) > 16 {
			t.Fatalf("a task of %d deliveries, want 1..16", len(b.IDs))
		}
		for _, id := range b.IDs {
			if tenantOf[id] != b.TenantID {
				t.Fatalf("delivery %s in a task of tenant %s", id, b.TenantID)
			}
			seen[id]++
		}
	}
	for _, id := range append(rowIDs, late) {
		if seen[id] != 1 {
			t.Errorf("delivery %s queued %d times, want 1", id, seen[id])
		}
	}
	t.Logf("%d deliveries in %d tasks", len(rowIDs)+1, len(pending))
}
