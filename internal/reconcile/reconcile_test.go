package reconcile_test

import (
	"strings"
	"testing"

	"leadpipe/internal/apptest"
)

// TestReconcile runs the tests that can share one application, each with a
// tenant of its own (a fresh database per test costs seconds). The tests
// with a worker, another configuration or a global clock have their own.
func TestReconcile(t *testing.T) {
	base := apptest.New(t, "rec", apptest.Options{RedisDB: apptest.RedisReconcile})
	for _, c := range []struct {
		name string
		fn   func(*testing.T, *env)
	}{
		{"FlakySenderAPI", testFlakySenderAPI},
		{"Generic", testGeneric},
		{"MetaEnrichment", testMetaEnrichment},
		{"SSRFGuard", testSSRFGuard},
		{"TriggerIsIdempotent", testTriggerIsIdempotent},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &env{Env: base, ten: base.Tenant(strings.ToLower(c.name)), svc: base.App.Web.Reconcile}
			c.fn(t, e)
		})
	}
}
