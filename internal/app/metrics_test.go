package app_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"leadpipe/internal/apptest"
)

// The server's /metrics and the worker's (its own listener) report the
// duplicate log's backlog.
func TestMetricsReportTheDuplicateLog(t *testing.T) {
	e := apptest.New(t, "app_metrics", apptest.Options{RedisDB: apptest.RedisApp})
	for name, h := range map[string]http.Handler{"server": e.App.Handler(), "worker": e.App.Web.OpsRoutes()} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		for _, want := range []string{"\nleadpipe_duplicate_log_rows 0\n", "\nleadpipe_duplicate_log_oldest_seconds 0\n",
			"\nleadpipe_duplicate_log_scrape_error 0\n"} {
			if !strings.Contains(rec.Body.String(), want) {
				t.Errorf("%s /metrics (%d) lacks %q", name, rec.Code, strings.TrimSpace(want))
			}
		}
	}
}
