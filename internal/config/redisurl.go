package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// RedisMode is how Leadpipe reaches Redis.
type RedisMode string

// Redis modes, one per LEADPIPE_REDIS_URL scheme family.
const (
	RedisSingle   RedisMode = "single"   // redis://, rediss://: one server
	RedisSentinel RedisMode = "sentinel" // redis-sentinel://: the master that Sentinels name
	RedisCluster  RedisMode = "cluster"  // redis-cluster://: a Redis Cluster (database 0 only)
)

// RedisTarget is a parsed Redis location. internal/jobs turns it into
// Asynq's connection options (RedisClientOpt, RedisFailoverClientOpt or
// RedisClusterClientOpt), from which every Redis client of Leadpipe is made.
type RedisTarget struct {
	Mode  RedisMode
	Addrs []string // the server; the Sentinels; the Cluster seed nodes
	// Username and Password authenticate to Redis itself (the master and
	// replicas under Sentinel, every node of a Cluster).
	Username, Password string
	DB                 int
	TLS                bool
	TLSServerName      string // rediss://: the host name the certificate must carry
	MasterName         string // Sentinel: the monitored master's name
	SentinelPassword   string // Sentinel: the Sentinels' own password (query sentinel_password)
}

// String describes the target without secrets, for logs.
func (t RedisTarget) String() string {
	s := string(t.Mode) + " " + strings.Join(t.Addrs, ",")
	if t.MasterName != "" {
		s += " master=" + t.MasterName
	}
	if t.DB != 0 {
		s += " db=" + strconv.Itoa(t.DB)
	}
	if t.TLS {
		s += " tls"
	}
	return s
}

// ParseRedisURL parses LEADPIPE_REDIS_URL:
//
//	redis://[[user]:password@]host[:port][/db]
//	rediss://…                                   (the same over TLS)
//	redis-sentinel://[[user]:password@]h1[:p1],h2[:p2],…[/db]?master=NAME[&sentinel_password=…][&tls=true]
//	redis-cluster://[[user]:password@]h1[:p1],h2[:p2],…[?tls=true]
//
// Ports default to 6379 (26379 for Sentinels). A Cluster has only
// database 0, so a path naming another database is an error. Errors never
// repeat the password.
func ParseRedisURL(raw string) (RedisTarget, error) {
	var t RedisTarget
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return t, fmt.Errorf("want redis://, rediss://, redis-sentinel:// or redis-cluster://")
	}
	defaultPort := "6379"
	switch scheme {
	case "redis", "rediss":
		t.Mode, t.TLS = RedisSingle, scheme == "rediss"
	case "redis-sentinel":
		t.Mode, defaultPort = RedisSentinel, "26379"
	case "redis-cluster":
		t.Mode = RedisCluster
	default:
		return t, fmt.Errorf("unknown scheme %q: want redis, rediss, redis-sentinel or redis-cluster", scheme)
	}
	rest, rawQuery, _ := strings.Cut(rest, "?")
	if strings.Contains(rawQuery, "#") || strings.Contains(rest, "#") {
		return t, fmt.Errorf("a fragment (#…) has no meaning here")
	}
	authority, path, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		user, pass, hasPass := strings.Cut(authority[:i], ":")
		var err error
		if t.Username, err = url.PathUnescape(user); err != nil {
			return t, fmt.Errorf("user name: bad %%-escape")
		}
		if hasPass {
			if t.Password, err = url.PathUnescape(pass); err != nil {
				return t, fmt.Errorf("password: bad %%-escape")
			}
		}
		authority = authority[i+1:]
	}
	if authority == "" {
		return t, fmt.Errorf("names no host")
	}
	for _, hp := range strings.Split(authority, ",") {
		addr, err := hostPort(hp, defaultPort)
		if err != nil {
			return t, err
		}
		t.Addrs = append(t.Addrs, addr)
	}
	if t.Mode == RedisSingle && len(t.Addrs) > 1 {
		return t, fmt.Errorf("%s:// takes one host; for several use redis-sentinel:// or redis-cluster://", scheme)
	}
	if path = strings.Trim(path, "/"); path != "" {
		n, err := strconv.Atoi(path)
		if err != nil || n < 0 || n > 15 {
			return t, fmt.Errorf("the path is the database number: want 0-15, got %q", path)
		}
		if t.Mode == RedisCluster && n != 0 {
			return t, fmt.Errorf("a Redis Cluster has only database 0")
		}
		t.DB = n
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return t, fmt.Errorf("query: %v", err)
	}
	for k, vs := range q {
		v := vs[len(vs)-1]
		switch {
		case k == "master" && t.Mode == RedisSentinel:
			t.MasterName = v
		case k == "sentinel_password" && t.Mode == RedisSentinel:
			t.SentinelPassword = v
		case k == "tls" && t.Mode != RedisSingle:
			b, err := strconv.ParseBool(v)
			if err != nil {
				return t, fmt.Errorf("tls: want true or false")
			}
			t.TLS = b
		default:
			return t, fmt.Errorf("unknown parameter %q for %s://", k, scheme)
		}
	}
	if t.Mode == RedisSentinel && t.MasterName == "" {
		return t, fmt.Errorf("redis-sentinel:// needs ?master=NAME (the name the Sentinels monitor)")
	}
	if t.TLS {
		t.TLSServerName, _, _ = net.SplitHostPort(t.Addrs[0])
	}
	return t, nil
}

func hostPort(hp, defaultPort string) (string, error) {
	if hp == "" {
		return "", fmt.Errorf("empty host in the host list")
	}
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		// No port: the whole thing is the host (an IPv6 literal needs brackets).
		if strings.Count(hp, ":") > 0 && !strings.HasPrefix(hp, "[") {
			return "", fmt.Errorf("bad host:port %q", hp)
		}
		host, port = strings.Trim(hp, "[]"), defaultPort
	}
	if host == "" {
		return "", fmt.Errorf("bad host:port %q: no host", hp)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("bad port in %q", hp)
	}
	return net.JoinHostPort(host, port), nil
}
