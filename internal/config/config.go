// Package config reads Leadpipe's configuration from the environment only.
// Every variable is declared once in the table below; each bad value fails
// start with a message naming the variable.
package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// DevSecretKey is used when LEADPIPE_SECRET_KEY is unset. Never in production:
// the server logs a loud warning.
const DevSecretKey = "bGVhZHBpcGUtZGV2LWtleS1kby1ub3QtdXNlLXByb2Q="

// Config is the validated configuration.
type Config struct {
	Addr                string
	MySQLDSN            string
	MySQLReadDSN        string        // empty: every read on MySQLDSN
	MySQLReadMaxLag     time.Duration // a replica further behind is not read
	RedisAddr           string
	RedisPassword       string
	RedisDB             int
	RedisURL            string      // LEADPIPE_REDIS_URL as given (may hold a password)
	Redis               RedisTarget // how to reach Redis: from LEADPIPE_REDIS_URL, else _ADDR/_PASSWORD/_DB
	BaseURL             string
	AdminToken          string // empty: admin API off
	MetricsToken        string // empty: /metrics open
	WorkerAddr          string // cmd/worker's own listener (/metrics, /healthz, /readyz)
	SecretKey           []byte // 32 bytes
	SecretKeyIsDev      bool
	Worker              string // "inprocess" | "off"
	Procs               int    // LEADPIPE_PROCS: ProcsShared, ProcsAll (0) or a number of CPUs
	AllowPrivateTargets bool
	IdempotencyTTL      time.Duration
	LogLevel            string
	LogFormat           string // "text" | "json"
	ShutdownTimeout     time.Duration
	SweepAfter          time.Duration
	TrustProxyHeaders   bool
	// DuplicateMemory bounds the duplicate fast path in bytes (negative:
	// off; see internal/webhooks/dupfast.go).
	DuplicateMemory int64
	// SMTPURL is where e-mail goes ("" : every message is kept for the
	// mail preview, docs/NOTIFICATIONS.md); MailFrom its sender.
	SMTPURL  string
	MailFrom string
}

// Var describes one environment variable for docs/OPERATING.md, `server config` and errors.
type Var struct {
	Name, Default, Help string
	Secret              bool // also readable from NAME_FILE
	parse               func(c *Config, v string) error
}

// LEADPIPE_PROCS: ProcsAll leaves GOMAXPROCS at Go's default (every CPU
// of the machine or the container); ProcsShared halves it.
const (
	ProcsAll    = 0
	ProcsShared = -1
)

// Vars is the single table of configuration variables.
var Vars = []Var{
	{Name: "LEADPIPE_ADDR", Default: ":8080", Help: "HTTP listen address", parse: func(c *Config, v string) error {
		if _, _, err := net.SplitHostPort(v); err != nil {
			return fmt.Errorf("want host:port, e.g. :8080")
		}
		c.Addr = v
		return nil
	}},
	{Name: "LEADPIPE_MYSQL_DSN", Default: "root@tcp(127.0.0.1:3306)/leadpipe?parseTime=true&loc=UTC", Help: "MySQL/MariaDB DSN (go-sql-driver format); the database is created if missing", Secret: true, parse: dsnVar(false, func(c *Config, v string) { c.MySQLDSN = v })},
	{Name: "LEADPIPE_MYSQL_READ_DSN", Default: "", Help: "optional replica DSN: lists, charts and exports read from it while it replicates within LEADPIPE_MYSQL_READ_MAX_LAG (else from the primary); reads of one's own writes always use LEADPIPE_MYSQL_DSN", Secret: true, parse: dsnVar(true, func(c *Config, v string) { c.MySQLReadDSN = v })},
	{Name: "LEADPIPE_MYSQL_READ_MAX_LAG", Default: "10s", Help: "a replica more than this behind the primary (or not replicating) is not read", parse: durationVar(func(c *Config, d time.Duration) { c.MySQLReadMaxLag = d })},
	{Name: "LEADPIPE_REDIS_ADDR", Default: "127.0.0.1:6379", Help: "Redis address for Asynq", parse: func(c *Config, v string) error {
		if _, _, err := net.SplitHostPort(v); err != nil {
			return fmt.Errorf("want host:port")
		}
		c.RedisAddr = v
		return nil
	}},
	{Name: "LEADPIPE_REDIS_PASSWORD", Default: "", Help: "Redis password", Secret: true, parse: func(c *Config, v string) error {
		c.RedisPassword = v
		return nil
	}},
	{Name: "LEADPIPE_REDIS_DB", Default: "0", Help: "Redis database number (0-15)", parse: func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 15 {
			return fmt.Errorf("want an integer 0-15")
		}
		c.RedisDB = n
		return nil
	}},
	{Name: "LEADPIPE_REDIS_URL", Default: "", Help: "overrides LEADPIPE_REDIS_ADDR/_PASSWORD/_DB: redis://[:pw@]host:port/db, rediss://… (TLS), redis-sentinel://[:pw@]h1:p1,h2:p2/db?master=NAME, redis-cluster://[:pw@]h1:p1,h2:p2,…", Secret: true, parse: func(c *Config, v string) error {
		if v == "" {
			return nil
		}
		t, err := ParseRedisURL(v)
		if err != nil {
			return err
		}
		c.RedisURL = v
		c.Redis = t
		return nil
	}},
	{Name: "LEADPIPE_BASE_URL", Default: "http://localhost:8080", Help: "public URL, used in shown webhook URLs", parse: func(c *Config, v string) error {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("want an absolute http(s) URL")
		}
		c.BaseURL = strings.TrimRight(v, "/")
		return nil
	}},
	{Name: "LEADPIPE_ADMIN_TOKEN", Default: "", Help: "bearer token of the platform operator (unset: admin API off)", Secret: true, parse: tokenVar(func(c *Config, v string) { c.AdminToken = v })},
	{Name: "LEADPIPE_METRICS_TOKEN", Default: "", Help: "when set, /metrics needs Authorization: Bearer <it> (unset: /metrics open)", Secret: true, parse: tokenVar(func(c *Config, v string) { c.MetricsToken = v })},
	{Name: "LEADPIPE_WORKER_ADDR", Default: ":9090", Help: "cmd/worker's own listener: /metrics, /healthz, /readyz", parse: func(c *Config, v string) error {
		if _, _, err := net.SplitHostPort(v); err != nil {
			return fmt.Errorf("want host:port or :port: %v", err)
		}
		c.WorkerAddr = v
		return nil
	}},
	{Name: "LEADPIPE_SECRET_KEY", Default: "", Help: "32 bytes, base64: encrypts stored secrets, signs sessions (unset: insecure dev key)", Secret: true, parse: func(c *Config, v string) error {
		if v == "" {
			v = DevSecretKey
			c.SecretKeyIsDev = true
		}
		k, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			k, err = base64.RawStdEncoding.DecodeString(v)
		}
		if err != nil || len(k) != 32 {
			return fmt.Errorf("want 32 bytes in base64 (e.g. `openssl rand -base64 32`)")
		}
		c.SecretKey = k
		return nil
	}},
	{Name: "LEADPIPE_WORKER", Default: "inprocess", Help: "inprocess: the server also runs the worker and scheduler; off: run cmd/worker separately", parse: choiceVar(func(c *Config, v string) { c.Worker = v }, "inprocess", "off")},
	{Name: "LEADPIPE_PROCS", Default: "shared", Help: "CPUs that run this process's Go code at once (GOMAXPROCS): shared (half of the machine's or container's, at least 1: MySQL beside it needs most of the CPU), all, or a number; GOMAXPROCS, when set, wins", parse: func(c *Config, v string) error {
		switch v {
		case "shared":
			c.Procs = ProcsShared
			return nil
		case "all":
			c.Procs = ProcsAll
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("want shared, all or a number of CPUs (1 or more)")
		}
		c.Procs = n
		return nil
	}},
	{Name: "LEADPIPE_ALLOW_PRIVATE_TARGETS", Default: "false", Help: "let outbound calls reach loopback/private addresses (local testing only)", parse: boolVar(func(c *Config, b bool) { c.AllowPrivateTargets = b })},
	{Name: "LEADPIPE_IDEMPOTENCY_TTL", Default: "24h", Help: "how long Idempotency-Key outcomes are kept", parse: durationVar(func(c *Config, d time.Duration) { c.IdempotencyTTL = d })},
	{Name: "LEADPIPE_SWEEP_AFTER", Default: "5s", Help: "a delivery unprocessed this long is re-enqueued by the sweeper", parse: durationVar(func(c *Config, d time.Duration) { c.SweepAfter = d })},
	{Name: "LEADPIPE_SHUTDOWN_TIMEOUT", Default: "20s", Help: "graceful shutdown limit", parse: durationVar(func(c *Config, d time.Duration) { c.ShutdownTimeout = d })},
	{Name: "LEADPIPE_LOG_LEVEL", Default: "info", Help: "debug, info, warn or error", parse: choiceVar(func(c *Config, v string) { c.LogLevel = v }, "debug", "info", "warn", "error")},
	{Name: "LEADPIPE_LOG_FORMAT", Default: "text", Help: "text or json", parse: choiceVar(func(c *Config, v string) { c.LogFormat = v }, "text", "json")},
	{Name: "LEADPIPE_DUPLICATE_MEMORY", Default: "32MiB", Help: "memory per server process for answering duplicates of committed deliveries without a database round trip (their delivery ids, and the counts waiting for the next flush); 0 turns that off", parse: func(c *Config, v string) error {
		n, err := parseBytes(v)
		if err != nil {
			return err
		}
		if n == 0 {
			n = -1
		}
		c.DuplicateMemory = n
		return nil
	}},
	// OpenTelemetry tracing (internal/tracing): the standard variables,
	// read by the SDK; listed here for `server config` and checked early.
	{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Default: "", Help: "OTLP/HTTP collector base URL (e.g. http://localhost:4318); set it (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) to turn tracing on. Unset: tracing off", parse: func(c *Config, v string) error {
		if v != "" {
			if u, err := url.Parse(v); err != nil || u.Host == "" {
				return fmt.Errorf("want a URL like http://localhost:4318")
			}
		}
		return nil
	}},
	{Name: "OTEL_SERVICE_NAME", Default: "", Help: "service name on the spans (default leadpipe-server / leadpipe-worker)", parse: func(*Config, string) error { return nil }},
	{Name: "OTEL_TRACES_SAMPLER", Default: "", Help: "always_on, always_off, traceidratio, parentbased_always_on (the SDK's default), parentbased_always_off or parentbased_traceidratio", parse: func(c *Config, v string) error {
		switch v {
		case "", "always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio":
			return nil
		}
		return fmt.Errorf("want always_on, always_off, traceidratio or parentbased_…")
	}},
	{Name: "OTEL_TRACES_SAMPLER_ARG", Default: "", Help: "the ratio of the traceidratio samplers, 0 to 1 (0.01: one trace in a hundred)", parse: func(c *Config, v string) error {
		if v == "" {
			return nil
		}
		if f, err := strconv.ParseFloat(v, 64); err != nil || f < 0 || f > 1 {
			return fmt.Errorf("want a number from 0 to 1")
		}
		return nil
	}},
	{Name: "OTEL_SDK_DISABLED", Default: "false", Help: "true: tracing off whatever else is set", parse: func(c *Config, v string) error {
		if _, err := strconv.ParseBool(v); err != nil {
			return fmt.Errorf("want true or false")
		}
		return nil
	}},
	{Name: "LEADPIPE_SMTP_URL", Default: "", Help: "where e-mail is sent: smtp://user:pass@host:587 (STARTTLS; credentials only over TLS), smtps://user:pass@host:465 (implicit TLS), smtp://host:25 (a local relay: STARTTLS when offered). Unset: messages are kept in the admins' mail preview (/settings/mail) instead", Secret: true, parse: func(c *Config, v string) error {
		if v == "" {
			return nil
		}
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Hostname() == "" {
			return fmt.Errorf("want smtp://[user:pass@]host:587 or smtps://[user:pass@]host:465")
		}
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return fmt.Errorf("bad port")
			}
		}
		c.SMTPURL = v
		return nil
	}},
	{Name: "LEADPIPE_MAIL_FROM", Default: "Leadpipe <leadpipe@localhost>", Help: "the From of every e-mail (an address, or Name <address>)", parse: func(c *Config, v string) error {
		a, err := mail.ParseAddress(v)
		if err != nil {
			return fmt.Errorf("want an address like Leadpipe <leads@example.com>")
		}
		c.MailFrom = a.String()
		return nil
	}},
	{Name: "LEADPIPE_TRUST_PROXY", Default: "false", Help: "trust X-Forwarded-For/-Proto from a reverse proxy", parse: boolVar(func(c *Config, b bool) { c.TrustProxyHeaders = b })},
}

// parseBytes reads a size: bytes, or a number with KiB, MiB or GiB.
func parseBytes(v string) (int64, error) {
	num, mult := v, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("want a size like 32MiB, 512KiB or 1048576 (bytes)")
	}
	return n * mult, nil
}

// dsnVar reads a go-sql-driver DSN that names a database; an optional
// one may be empty (unset).
func dsnVar(optional bool, set func(*Config, string)) func(*Config, string) error {
	return func(c *Config, v string) error {
		if v == "" && optional {
			return nil
		}
		cfg, err := mysql.ParseDSN(v)
		if err != nil {
			return fmt.Errorf("not a valid DSN: %v", err)
		}
		if cfg.DBName == "" {
			return fmt.Errorf("names no database")
		}
		set(c, v)
		return nil
	}
}

// tokenVar reads a bearer token: empty (the feature is off) or long
// enough not to be guessed.
func tokenVar(set func(*Config, string)) func(*Config, string) error {
	return func(c *Config, v string) error {
		if v != "" && len(v) < 16 {
			return fmt.Errorf("too short: use at least 16 characters")
		}
		set(c, v)
		return nil
	}
}

// choiceVar reads one of two or more words.
func choiceVar(set func(*Config, string), choices ...string) func(*Config, string) error {
	return func(c *Config, v string) error {
		if !slices.Contains(choices, v) {
			last := len(choices) - 1
			return fmt.Errorf("want %s or %s", strings.Join(choices[:last], ", "), choices[last])
		}
		set(c, v)
		return nil
	}
}

func boolVar(set func(*Config, bool)) func(*Config, string) error {
	return func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false")
		}
		set(c, b)
		return nil
	}
}

func durationVar(set func(*Config, time.Duration)) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("want a positive duration like 24h or 90s")
		}
		set(c, d)
		return nil
	}
}

// Load reads the configuration through getenv. All problems are reported
// together, one line per variable.
func Load(getenv func(string) string) (*Config, error) {
	c := &Config{}
	var errs []error
	for _, v := range Vars {
		val, err := lookup(v, getenv)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := v.parse(c, val); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %v", v.Name, redact(v, val), err))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid configuration:\n  %w", errors.Join(errs...))
	}
	if c.RedisURL == "" {
		c.Redis = RedisTarget{Mode: RedisSingle, Addrs: []string{c.RedisAddr}, Password: c.RedisPassword, DB: c.RedisDB}
	} else if c.Redis.Mode == RedisSingle {
		// Keep the single-server fields truthful for code that logs them.
		c.RedisAddr, c.RedisPassword, c.RedisDB = c.Redis.Addrs[0], c.Redis.Password, c.Redis.DB
	}
	return c, nil
}

func lookup(v Var, getenv func(string) string) (string, error) {
	val := getenv(v.Name)
	if v.Secret {
		if f := getenv(v.Name + "_FILE"); f != "" {
			if val != "" {
				return "", fmt.Errorf("%s and %s_FILE are both set: use one", v.Name, v.Name)
			}
			b, err := os.ReadFile(f)
			if err != nil {
				return "", fmt.Errorf("%s_FILE: %v", v.Name, err)
			}
			val = strings.TrimSpace(string(b))
		}
	}
	if val == "" {
		val = v.Default
	}
	return val, nil
}

func redact(v Var, val string) string {
	if v.Secret && val != "" {
		return "(redacted)"
	}
	return val
}
