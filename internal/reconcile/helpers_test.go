package reconcile_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/jobs"
	"leadpipe/internal/reconcile"
)

// env is an application with one tenant and the reconcile service.
type env struct {
	*apptest.Env
	ten apptest.Tenant
	svc *reconcile.Service
}

func newEnv(t *testing.T, prefix string, extra map[string]string) *env {
	t.Helper()
	e := apptest.New(t, prefix, apptest.Options{RedisDB: apptest.RedisReconcile, Env: extra})
	return &env{Env: e, ten: e.Tenant("acme"), svc: e.App.Web.Reconcile}
}

// startWorker runs the Asynq server with every registered handler but no
// scheduler, so nothing reconciles unless the test asks.
func (e *env) startWorker(t *testing.T) {
	t.Helper()
	srv := jobs.NewServer(e.App.Redis, slog.New(slog.DiscardHandler), 8)
	if err := srv.Start(e.App.Jobs.Mux()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
}

type createdSource struct {
	ID     string `json:"id"`
	Slug   string `json:"slug"`
	Secret string `json:"secret"`
	Hook   string `json:"webhook_url"`
}

// createSource creates a source that counts as reconciled before (a
// completed run two days ago), so its runs judge webhook loss; a newly
// configured source's first run is back-fill (createFreshSource).
func (e *env) createSource(t *testing.T, body map[string]any) createdSource {
	t.Helper()
	s := e.createFreshSource(t, body)
	e.markReconciledBefore(t, s.ID)
	return s
}

func (e *env) createFreshSource(t *testing.T, body map[string]any) createdSource {
	t.Helper()
	res := e.Do("POST", "/api/v1/sources", e.ten.Token, body)
	if res.Status != http.StatusCreated {
		t.Fatalf("create source: %d %s", res.Status, res.Body)
	}
	var s createdSource
	res.JSON(t, &s)
	return s
}

func (e *env) trigger(t *testing.T, sourceID string) string {
	t.Helper()
	res := e.Do("POST", "/api/v1/sources/"+sourceID+"/reconcile", e.ten.Token, nil)
	if res.Status != http.StatusAccepted {
		t.Fatalf("trigger: %d %s", res.Status, res.Body)
	}
	var out struct {
		RunID string `json:"run_id"`
	}
	res.JSON(t, &out)
	return out.RunID
}

func (e *env) runs(t *testing.T, sourceID string) []reconcile.RunView {
	t.Helper()
	res := e.Do("GET", "/api/v1/sources/"+sourceID+"/reconcile-runs", e.ten.Token, nil)
	if res.Status != http.StatusOK {
		t.Fatalf("runs: %d %s", res.Status, res.Body)
	}
	var out struct {
		Items []reconcile.RunView `json:"items"`
	}
	res.JSON(t, &out)
	return out.Items
}

// waitRun polls the runs API until the run is no longer running.
func (e *env) waitRun(t *testing.T, sourceID, runID string, timeout time.Duration) reconcile.RunView {
	t.Helper()
	var got reconcile.RunView
	apptest.Eventually(t, timeout, "run "+runID+" to finish", func() bool {
		for _, r := range e.runs(t, sourceID) {
			if r.ID == runID {
				got = r
				return r.State != reconcile.StateRunning
			}
		}
		return false
	})
	return got
}

func (e *env) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	if err := e.App.DB.GetContext(context.Background(), &n, q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// postAll posts signed webhook bodies with a few concurrent senders and
// fails on anything but 200.
func postAll(t *testing.T, url string, reqs []webhookReq) {
	t.Helper()
	ch := make(chan webhookReq)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	client := &http.Client{Timeout: 10 * time.Second}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range ch {
				req, _ := http.NewRequest("POST", url, bytes.NewReader(r.body))
				for k, v := range r.header {
					req.Header[k] = v
				}
				res, err := client.Do(req)
				if err != nil {
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
					continue
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					mu.Lock()
					failures = append(failures, res.Status+" "+string(b))
					mu.Unlock()
				}
			}
		}()
	}
	for _, r := range reqs {
		ch <- r
	}
	close(ch)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d webhook posts failed, first: %s", len(failures), failures[0])
	}
}

type webhookReq struct {
	header http.Header
	body   []byte
}
