package web

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// recordLines keeps every log record's message and attributes.
type recordLines struct {
	mu    sync.Mutex
	level slog.Level
	recs  []slog.Record
}

func (h *recordLines) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
func (h *recordLines) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.recs = append(h.recs, r.Clone())
	h.mu.Unlock()
	return nil
}
func (h *recordLines) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordLines) WithGroup(string) slog.Handler      { return h }

// count returns how many "http" lines there are and the sum of the
// summaries' counts.
func (h *recordLines) count() (lines, summarised int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.recs {
		switch r.Message {
		case "http":
			lines++
		case "http duplicates not logged":
			r.Attrs(func(a slog.Attr) bool {
				if a.Key == "count" {
					summarised += int(a.Value.Int64())
				}
				return true
			})
		}
	}
	return
}

// At info level the lines of duplicate acknowledgements are sampled (at
// most dupLinesPerSecond a second, the rest counted in a summary line);
// every other request keeps its line: new deliveries, and a duplicate
// whose answer is not 2xx. At debug level every duplicate has its line.
func TestDuplicateLinesAreSampledAtInfo(t *testing.T) {
	serve := func(level slog.Level, status, n int, dup bool) *recordLines {
		h := &recordLines{level: level}
		mw := RequestLog(slog.New(h))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if dup {
				markDuplicate(r.Context())
			}
			w.WriteHeader(status)
		}))
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mw.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/hooks/t/s", nil))
			}()
		}
		wg.Wait()
		return h
	}
	const n = 300
	h := serve(slog.LevelInfo, 200, n, true)
	deadline := time.Now().Add(3 * time.Second)
	for {
		lines, summarised := h.count()
		if lines+summarised == n {
			// The requests ran within a second or two: one or two windows.
			if lines > 2*dupLinesPerSecond || summarised == 0 {
				t.Fatalf("%d duplicate lines written, %d summarised: want at most %d a second", lines, summarised, dupLinesPerSecond)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d lines + %d summarised, want %d requests accounted for", lines, summarised, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, c := range []struct {
		name   string
		level  slog.Level
		status int
		dup    bool
	}{
		{"new deliveries", slog.LevelInfo, 200, false},
		{"a duplicate answered 500", slog.LevelInfo, 500, true},
		{"duplicates at debug", slog.LevelDebug, 200, true},
	} {
		h := serve(c.level, c.status, n, c.dup)
		time.Sleep(1100 * time.Millisecond) // no summary comes
		if lines, summarised := h.count(); lines != n || summarised != 0 {
			t.Errorf("%s: %d lines, %d summarised, want every one of %d logged", c.name, lines, summarised, n)
		}
	}
}
