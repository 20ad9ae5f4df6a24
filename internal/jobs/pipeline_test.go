package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"leadpipe/internal/apptest"
	"leadpipe/internal/jobs"
)

func testRedis(t *testing.T) *redis.Client {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: apptest.RedisAddr(), DB: apptest.RedisJobs})
	if err := rc.FlushDB(context.Background()).Err(); err != nil {
		t.Fatalf("redis: %v", err)
	}
	t.Cleanup(func() { rc.FlushDB(context.Background()); rc.Close() })
	return rc
}

// Many goroutines' EVALSHA calls share round trips, and each gets back
// its own result.
func TestPipelinedClientResults(t *testing.T) {
	rc := testRedis(t)
	p := jobs.NewPipelinedClient(rc, 1, 0)
	defer p.Close()
	script := redis.NewScript(`return ARGV[1] .. ":" .. redis.call("INCR", KEYS[1])`)
	ctx := context.Background()
	if err := script.Load(ctx, rc).Err(); err != nil {
		t.Fatal(err)
	}
	const n = 400
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("k%d", i%7)
			got, err := script.Run(ctx, p, []string{key}, fmt.Sprint("call", i)).Text()
			if err != nil {
				errs <- err
				return
			}
			if want := fmt.Sprint("call", i) + ":"; !strings.HasPrefix(got, want) {
				errs <- fmt.Errorf("call %d got %q, another call's result", i, got)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var total int
	for i := 0; i < 7; i++ {
		v, _ := rc.Get(ctx, fmt.Sprintf("k%d", i)).Int()
		total += v
	}
	if total != n {
		t.Fatalf("scripts ran %d times, want %d", total, n)
	}
	if p.Calls.Load() != n || p.Groups.Load() == 0 {
		t.Fatalf("counted %d calls in %d round trips, want %d calls", p.Calls.Load(), p.Groups.Load(), n)
	}
	t.Logf("%d calls in %d round trips", p.Calls.Load(), p.Groups.Load())
}

// 50 concurrent enqueues of one task id through the pipelined client:
// exactly one is queued, the other 49 are told it exists.
func TestPipelinedEnqueueOnce(t *testing.T) {
	rc := testRedis(t)
	p := jobs.NewPipelinedClient(rc, 2, 0)
	defer p.Close()
	q := asynq.NewClientFromRedisClient(p)
	const n = 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ok, conflict int
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := q.EnqueueContext(context.Background(), asynq.NewTask("t:once", []byte("x")), asynq.TaskID("the-one"), asynq.Queue(jobs.QueueCritical))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, asynq.ErrTaskIDConflict):
				conflict++
			default:
				t.Errorf("enqueue: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok != 1 || conflict != n-1 {
		t.Fatalf("queued %d, conflicts %d; want 1 and %d", ok, conflict, n-1)
	}
	if l := rc.LLen(context.Background(), "asynq:{critical}:pending").Val(); l != 1 {
		t.Fatalf("pending list holds %d tasks, want 1", l)
	}
}

// A caller whose context ends stops waiting; a closed client answers
// ErrClosed at once; neither blocks.
func TestPipelinedClientCancelAndClose(t *testing.T) {
	rc := testRedis(t)
	p := jobs.NewPipelinedClient(rc, 1, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.EvalSha(ctx, "0000000000000000000000000000000000000000", nil).Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	p.Close()
	start := time.Now()
	if err := p.EvalSha(context.Background(), "0000000000000000000000000000000000000000", nil).Err(); !errors.Is(err, redis.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if time.Since(start) > time.Second {
		t.Fatal("call after Close blocked")
	}
	if err := rc.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("wrapped client closed too: %v", err)
	}
}

// With a linger, calls made within it share one round trip even when
// they arrive one after another.
func TestPipelinedClientLinger(t *testing.T) {
	rc := testRedis(t)
	p := jobs.NewPipelinedClient(rc, 1, 200*time.Millisecond)
	defer p.Close()
	script := redis.NewScript(`return redis.call("INCR", KEYS[1])`)
	ctx := context.Background()
	if err := script.Load(ctx, rc).Err(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := script.Run(ctx, p, []string{"n"}).Err(); err != nil {
				t.Error(err)
			}
		}()
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	if n, _ := rc.Get(ctx, "n").Int(); n != 10 {
		t.Fatalf("script ran %d times, want 10", n)
	}
	if g := p.Groups.Load(); g >= 10 {
		t.Fatalf("10 calls within the linger took %d round trips", g)
	}
}

// The pipelined client only helps while Asynq enqueues with exactly one
// EVALSHA per task (its Lua scripts, loaded once). If an Asynq upgrade
// changes that (plain commands, MULTI, EVAL, several calls per task), the
// enqueues bypass the pipeline and ingest loses the ~10 % measured in
// docs/BENCHMARKS.md: this test says so instead of the benchmark drifting.
func TestAsynqEnqueuesThroughOneEvalShaPerTask(t *testing.T) {
	rc := testRedis(t)
	p := jobs.NewPipelinedClient(rc, 1, 0)
	defer p.Close()
	q := asynq.NewClientFromRedisClient(p)
	ctx := context.Background()
	const n = 20
	for i := 0; i < n; i++ {
		if _, err := q.EnqueueContext(ctx, asynq.NewTask("t:guard", []byte("x")), asynq.TaskID(fmt.Sprintf("guard-%d", i)),
			asynq.Queue(jobs.QueueCritical)); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.Calls.Load(); got != n {
		t.Fatalf("Asynq made %d EVALSHA calls for %d enqueues through jobs.PipelinedClient, want exactly %d: "+
			"it no longer enqueues with one EVALSHA per task, so the pipeline no longer batches enqueues; "+
			"re-measure with cmd/benchingest and adapt or remove jobs.PipelinedClient", got, n, n)
	}
	if l := rc.LLen(ctx, "asynq:{critical}:pending").Val(); l != n {
		t.Fatalf("pending list holds %d tasks, want %d", l, n)
	}
}
