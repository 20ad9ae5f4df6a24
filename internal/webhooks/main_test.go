package webhooks_test

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
)

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	// The Redis-outage test makes go-redis log every failed dial.
	redis.SetLogger(quietRedis{})
	os.Exit(m.Run())
}
