package jobs

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"leadpipe/internal/batch"
)

// PipelinedClient is a Redis client whose EVALSHA calls, made at the same
// time from many goroutines, travel to Redis together: one pipeline, one
// write and one read for a whole group. Asynq enqueues every task with one
// EVALSHA, so an Asynq client built on it (asynq.NewClientFromRedisClient)
// pays Redis's per-command round trip and system calls once per group
// instead of once per task. A group leaves when linger has passed since
// its first call (0: at once, with whatever was already waiting). Every
// other command is the embedded client's, unchanged; the embedded client's
// read and write timeouts bound a pipeline.
// It halves Redis's CPU per request (docs/BENCHMARKS.md, "Settings and the
// numbers behind them").
// TestAsynqEnqueuesThroughOneEvalShaPerTask fails if an Asynq upgrade
// stops enqueueing with one EVALSHA per task.
type PipelinedClient struct {
	redis.UniversalClient

	Groups, Calls atomic.Int64

	loop      *batch.Loop[*evalReq]
	stop      chan struct{}
	closeOnce sync.Once
}

type evalReq struct {
	ctx  context.Context
	sha  string
	keys []string
	args []any
	cmd  *redis.Cmd
	done chan struct{}
}

// NewPipelinedClient wraps c; up to workers pipelines (of at most 64
// calls) may be in flight at once, each gathering for linger after its
// first call.
func NewPipelinedClient(c redis.UniversalClient, workers int, linger time.Duration) *PipelinedClient {
	p := &PipelinedClient{UniversalClient: c, stop: make(chan struct{})}
	p.loop = batch.New(batch.Options{MaxItems: 64, Linger: linger, Workers: max(workers, 1)}, nil, p.run)
	return p
}

// EvalSha queues the call with whatever else is waiting and returns its
// own result.
func (p *PipelinedClient) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	r := &evalReq{ctx: ctx, sha: sha, keys: keys, args: args, done: make(chan struct{})}
	if err := p.loop.Add(ctx, r); err != nil {
		if errors.Is(err, batch.ErrClosed) {
			err = redis.ErrClosed
		}
		return errCmd(ctx, err)
	}
	select {
	case <-r.done:
		return r.cmd
	case <-p.stop:
		return errCmd(ctx, redis.ErrClosed)
	case <-ctx.Done():
		return errCmd(ctx, ctx.Err())
	}
}

// Close stops the pipelines: waiting calls return redis.ErrClosed; the
// wrapped client stays open (it is the caller's to close).
func (p *PipelinedClient) Close() error {
	p.closeOnce.Do(func() {
		close(p.stop)
		go func() { _ = p.loop.Close(context.Background()) }()
	})
	return nil
}

func errCmd(ctx context.Context, err error) *redis.Cmd {
	c := redis.NewCmd(ctx)
	c.SetErr(err)
	return c
}

func (p *PipelinedClient) run(batch []*evalReq) {
	live := batch[:0:0]
	for _, r := range batch {
		if r.ctx.Err() == nil { // its caller has gone: not sent at all
			live = append(live, r)
		}
	}
	if len(live) == 0 {
		return
	}
	p.Groups.Add(1)
	p.Calls.Add(int64(len(live)))
	ctx := context.Background()
	if len(live) == 1 {
		r := live[0]
		r.cmd = p.UniversalClient.EvalSha(ctx, r.sha, r.keys, r.args...)
		close(r.done)
		return
	}
	pipe := p.UniversalClient.Pipeline()
	cmds := make([]*redis.Cmd, len(live))
	for i, r := range live {
		cmds[i] = pipe.EvalSha(ctx, r.sha, r.keys, r.args...)
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	for i, r := range live {
		r.cmd = cmds[i]
		close(r.done)
	}
}
