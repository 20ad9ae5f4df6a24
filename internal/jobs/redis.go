package jobs

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"leadpipe/internal/config"
)

// Redis timeouts of every client: short, so an unreachable Redis fails a
// call (the sweeper catches up later) instead of holding a request.
const (
	redisDialTimeout = 2 * time.Second
	redisIOTimeout   = 2 * time.Second
)

// RedisConnOpt turns the configured target into Asynq's own connection
// options: RedisClientOpt for one server, RedisFailoverClientOpt for a
// Sentinel-watched master, RedisClusterClientOpt for a Cluster. The Asynq
// server, client and inspector take it as it is; every other Redis client
// of Leadpipe is made from it by NewRedisClient, so they all follow a
// failover the same way.
func RedisConnOpt(t config.RedisTarget) asynq.RedisConnOpt {
	var tc *tls.Config
	if t.TLS {
		tc = &tls.Config{ServerName: t.TLSServerName, MinVersion: tls.VersionTLS12}
	}
	switch t.Mode {
	case config.RedisSentinel:
		return asynq.RedisFailoverClientOpt{MasterName: t.MasterName, SentinelAddrs: t.Addrs,
			SentinelPassword: t.SentinelPassword, Username: t.Username, Password: t.Password, DB: t.DB,
			DialTimeout: redisDialTimeout, ReadTimeout: redisIOTimeout, WriteTimeout: redisIOTimeout, TLSConfig: tc}
	case config.RedisCluster:
		return asynq.RedisClusterClientOpt{Addrs: t.Addrs, Username: t.Username, Password: t.Password,
			DialTimeout: redisDialTimeout, ReadTimeout: redisIOTimeout, WriteTimeout: redisIOTimeout, TLSConfig: tc}
	default:
		return asynq.RedisClientOpt{Addr: t.Addrs[0], Username: t.Username, Password: t.Password, DB: t.DB,
			DialTimeout: redisDialTimeout, ReadTimeout: redisIOTimeout, WriteTimeout: redisIOTimeout, TLSConfig: tc}
	}
}

// NewRedisClient makes a go-redis client from Asynq options with Asynq's
// own constructor (a *redis.Client, *redis.Client through Sentinel, or
// *redis.ClusterClient).
func NewRedisClient(opt asynq.RedisConnOpt) redis.UniversalClient {
	c, ok := opt.MakeRedisClient().(redis.UniversalClient)
	if !ok {
		panic(fmt.Sprintf("jobs: %T makes no go-redis client", opt))
	}
	return c
}

// FlushAll empties the client's database on every master it reaches (a
// Cluster's FLUSHDB is per node). For tests and benchmarks only.
func FlushAll(ctx context.Context, c redis.UniversalClient) error {
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.FlushDB(ctx).Err() })
	}
	return c.FlushDB(ctx).Err()
}
