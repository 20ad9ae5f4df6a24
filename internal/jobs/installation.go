package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// InstallationKey holds, in the Redis database an installation uses, the
// id and description of that installation. Asynq's queue names are fixed,
// so two installations on one Redis database would consume each other's
// tasks (and each other's deliveries would wait for a sweeper that never
// sees them); the key makes the second one a clear startup error.
const InstallationKey = "leadpipe:installation"

// installationTTL bounds how long a crashed installation keeps its claim:
// a live process refreshes it every third of it.
const installationTTL = 30 * time.Second

// ErrRedisTaken is returned by ClaimRedis when another installation uses
// the Redis database.
var ErrRedisTaken = errors.New("the Redis database is used by another Leadpipe installation")

// releaseIfOurs deletes the key only while it still names this installation.
var releaseIfOurs = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

// InstallationClaim keeps an installation's claim on its Redis database.
type InstallationClaim struct {
	rdb   redis.UniversalClient
	value string
	stop  chan struct{}
	done  chan struct{}
}

// ClaimRedis claims the Redis database for installation id (desc says
// which database it is, for the other installation's error message) and
// keeps refreshing the claim until Release. Processes of one installation
// share the claim. When another installation holds it, the error names it.
func ClaimRedis(ctx context.Context, rdb redis.UniversalClient, id, desc string, log *slog.Logger) (*InstallationClaim, error) {
	value := id + " " + desc
	if err := claimOnce(ctx, rdb, id, value); err != nil {
		return nil, err
	}
	c := &InstallationClaim{rdb: rdb, value: value, stop: make(chan struct{}), done: make(chan struct{})}
	go c.refresh(id, log)
	return c, nil
}

func claimOnce(ctx context.Context, rdb redis.UniversalClient, id, value string) error {
	ok, err := rdb.SetNX(ctx, InstallationKey, value, installationTTL).Result()
	if err != nil {
		return fmt.Errorf("redis: claim the database for this installation: %w", err)
	}
	if ok {
		return nil
	}
	cur, err := rdb.Get(ctx, InstallationKey).Result()
	if errors.Is(err, redis.Nil) { // expired in between
		return claimOnce(ctx, rdb, id, value)
	}
	if err != nil {
		return fmt.Errorf("redis: read the installation claim: %w", err)
	}
	if otherID, otherDesc, _ := strings.Cut(cur, " "); otherID != id {
		return fmt.Errorf("%w (%s, installation %s): give this one its own LEADPIPE_REDIS_DB (or LEADPIPE_REDIS_URL), or stop the other; a crashed one's claim lapses after %s",
			ErrRedisTaken, otherDesc, otherID, installationTTL)
	}
	return rdb.Expire(ctx, InstallationKey, installationTTL).Err()
}

func (c *InstallationClaim) refresh(id string, log *slog.Logger) {
	defer close(c.done)
	t := time.NewTicker(installationTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := claimOnce(ctx, c.rdb, id, c.value)
			cancel()
			if errors.Is(err, ErrRedisTaken) {
				log.Error("another installation took this Redis database: tasks may be consumed by it", "err", err)
			} else if err != nil {
				log.Warn("refreshing the installation's Redis claim failed", "err", err)
			}
		}
	}
}

// Release stops refreshing and gives the claim up, so a restart with
// another database does not wait for it to lapse.
func (c *InstallationClaim) Release(ctx context.Context) {
	close(c.stop)
	<-c.done
	_ = releaseIfOurs.Run(ctx, c.rdb, []string{InstallationKey}, c.value).Err()
}
