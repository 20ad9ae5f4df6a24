package idempotency

import (
	"context"

	"github.com/hibiken/asynq"
)

// TypePurge is the periodic task that deletes expired keys.
const TypePurge = "idempotency:purge"

// HandlePurge is the Asynq handler of TypePurge (idempotent: deleting
// what is expired twice deletes nothing the second time).
func (s *Store) HandlePurge(ctx context.Context, _ *asynq.Task) error {
	_, err := s.Purge(ctx)
	return err
}
