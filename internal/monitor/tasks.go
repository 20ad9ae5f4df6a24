package monitor

import (
	"context"
	"time"

	"github.com/hibiken/asynq"
)

// Task types.
const (
	TypeEvaluate = "monitor:evaluate" // every minute: alert rules
	TypePurge    = "monitor:purge"    // hourly: per-minute and hourly rows past retention
)

// EvaluateLag keeps the evaluator off the minute that just ended until
// every process has flushed it (the recorders flush every 2 s).
const EvaluateLag = 5 * time.Second

// HandleEvaluate is the monitor:evaluate task. Re-running it for the same
// minute is harmless: firing and resolving are idempotent.
func (s *Service) HandleEvaluate(ctx context.Context, _ *asynq.Task) error {
	return s.Evaluate(ctx, s.now().Add(-EvaluateLag))
}

// HandlePurge is the monitor:purge task.
func (s *Service) HandlePurge(ctx context.Context, _ *asynq.Task) error {
	return s.Purge(ctx, s.now())
}
