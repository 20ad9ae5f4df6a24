package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":8080" || c.RedisAddr != "127.0.0.1:6379" || c.Worker != "inprocess" || !c.SecretKeyIsDev || c.AdminToken != "" || c.AllowPrivateTargets || c.Procs != ProcsShared {
		t.Fatalf("defaults %+v", c)
	}
}

func TestEachInvalidVariableIsNamed(t *testing.T) {
	bad := map[string]string{
		"LEADPIPE_ADDR":                  "8080",
		"LEADPIPE_MYSQL_DSN":             "not a dsn",
		"LEADPIPE_REDIS_ADDR":            "redis",
		"LEADPIPE_REDIS_DB":              "16",
		"LEADPIPE_BASE_URL":              "localhost:8080",
		"LEADPIPE_ADMIN_TOKEN":           "short",
		"LEADPIPE_SECRET_KEY":            "dG9vIHNob3J0",
		"LEADPIPE_WORKER":                "sometimes",
		"LEADPIPE_ALLOW_PRIVATE_TARGETS": "maybe",
		"LEADPIPE_IDEMPOTENCY_TTL":       "-1h",
		"LEADPIPE_LOG_LEVEL":             "loud",
		"LEADPIPE_PROCS":                 "0",
	}
	for name, val := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := Load(env(map[string]string{name: val}))
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Fatalf("%s=%q: error %v does not name it", name, val, err)
			}
		})
	}
	// All problems reported together.
	_, err := Load(env(bad))
	for name := range bad {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("combined error misses %s", name)
		}
	}
	// Secrets are not echoed.
	_, err = Load(env(map[string]string{"LEADPIPE_SECRET_KEY": "c2VjcmV0LXZhbHVl"}))
	if strings.Contains(err.Error(), "c2VjcmV0LXZhbHVl") {
		t.Fatal("secret echoed in error")
	}
}

func TestFileVariants(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tok")
	os.WriteFile(p, []byte("admin-token-from-file-123\n"), 0o600)
	c, err := Load(env(map[string]string{"LEADPIPE_ADMIN_TOKEN_FILE": p}))
	if err != nil || c.AdminToken != "admin-token-from-file-123" {
		t.Fatalf("%v %+v", err, c)
	}
	_, err = Load(env(map[string]string{"LEADPIPE_ADMIN_TOKEN_FILE": p, "LEADPIPE_ADMIN_TOKEN": "x-x-x-x-x-x-x-x-x"}))
	if err == nil || !strings.Contains(err.Error(), "LEADPIPE_ADMIN_TOKEN") {
		t.Fatalf("both set: %v", err)
	}
	_, err = Load(env(map[string]string{"LEADPIPE_SECRET_KEY_FILE": "/nonexistent"}))
	if err == nil || !strings.Contains(err.Error(), "LEADPIPE_SECRET_KEY_FILE") {
		t.Fatalf("missing file: %v", err)
	}
}
