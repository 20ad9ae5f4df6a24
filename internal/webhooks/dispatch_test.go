package webhooks_test

import (
	"context"
	"sync"
	"testing"

	"github.com/hibiken/asynq"

	"leadpipe/internal/apptest"
	"leadpipe/internal/ids"
	"leadpipe/internal/jobs"
	"leadpipe/internal/webhooks"
)

// The dispatcher, fed the same deliveries by many requests at once and
// with a buffer small enough to overflow (the callers then enqueue
// themselves), queues each delivery exactly once; Flush leaves nothing
// behind, and a dispatch after Flush is still enqueued.
func TestDispatcherQueuesEachDeliveryOnce(t *testing.T) {
	e := apptest.New(t, "hooks_dispatch", apptest.Options{RedisDB: apptest.RedisWebhooks})
	d := &webhooks.Dispatcher{Queue: e.App.Queue, Log: e.App.Log, Workers: 3, Buffer: 4}
	tenantID := ids.New()
	rowIDs := make([]string, 120)
	for i := range rowIDs {
		rowIDs[i] = ids.New()
	}
	var wg sync.WaitGroup
	for g := 0; g < 12; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g % 3; i < len(rowIDs); i += 3 { // every id from four goroutines
				d.Dispatch(tenantID, []string{rowIDs[i]})
			}
		}()
	}
	wg.Wait()
	d.Flush(context.Background())
	late := ids.New()
	d.Dispatch(tenantID, []string{late})

	insp := asynq.NewInspectorFromRedisClient(e.App.RDB)
	pending, err := insp.ListPendingTasks(jobs.QueueCritical, asynq.PageSize(1000))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, ti := range pending {
		seen[ti.ID]++
	}
	for _, id := range append(rowIDs, late) {
		if seen[id] != 1 {
			t.Errorf("delivery %s queued %d times, want 1", id, seen[id])
		}
	}
	if len(pending) != len(rowIDs)+1 {
		t.Fatalf("%d tasks pending, want %d", len(pending), len(rowIDs)+1)
	}
}
