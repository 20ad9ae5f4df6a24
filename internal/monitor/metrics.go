package monitor

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

type ingestMetrics struct {
	hist *prometheus.HistogramVec
}

func newIngestMetrics() *ingestMetrics {
	return &ingestMetrics{hist: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "leadpipe_ingest_duration_seconds",
		Help:    "Time to handle one webhook request, by source kind and result.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	}, []string{"kind", "result"})}
}

func (m *ingestMetrics) observe(kind, result string, d time.Duration) {
	m.hist.WithLabelValues(kind, result).Observe(d.Seconds())
}

// MetricsOptions are the sources of /metrics besides the Recorder.
type MetricsOptions struct {
	Recorder *Recorder
	DB       *sqlx.DB               // open alerts (nil: left out)
	Queues   *asynq.Inspector       // queue depth (nil: left out)
	QueueSet []string               // queues always reported, even before they exist in Redis
	Log      *slog.Logger           //
	Timeout  time.Duration          // per scrape for Redis and MySQL, default 2 s
	Extra    []prometheus.Collector // more collectors of other areas
}

// NewMetricsHandler returns the Prometheus handler for GET /metrics, on a
// registry of its own (nothing leaks in from global registrations).
func NewMetricsHandler(o MetricsOptions) http.Handler {
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if o.Recorder != nil {
		reg.MustRegister(o.Recorder.ingest.hist, &deliveryCollector{r: o.Recorder})
	}
	if o.DB != nil {
		reg.MustRegister(&alertCollector{db: o.DB, timeout: o.Timeout, log: o.Log})
	}
	if o.Queues != nil {
		reg.MustRegister(&queueCollector{insp: o.Queues, queues: o.QueueSet, timeout: o.Timeout, log: o.Log})
	}
	for _, c := range o.Extra {
		reg.MustRegister(c)
	}
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, Timeout: 10 * time.Second})
	return h
}

var (
	descDeliveries = prometheus.NewDesc("leadpipe_deliveries_total",
		"Webhook deliveries by tenant, source and result (accepted = new, duplicate, rejected = bad signature, dead_letter).",
		[]string{"tenant", "source", "result"}, nil)
	descReconcile = prometheus.NewDesc("leadpipe_reconcile_records_total",
		"Records found by reconcile runs: new (the webhooks never brought them), known, or backfill (a first run).",
		[]string{"tenant", "source", "result"}, nil)
	descProcessingFailures = prometheus.NewDesc("leadpipe_processing_failures_total",
		"Deliveries whose processing gave up (state failed: no natural key, misconfigured source, retries used up).",
		[]string{"tenant", "source", "result"}, nil)
	descPending = prometheus.NewDesc("leadpipe_monitor_pending_rows",
		"Per-minute counter rows held in memory, waiting to be flushed to MySQL.", nil, nil)
	descFlushErrors = prometheus.NewDesc("leadpipe_monitor_flush_errors_total",
		"Failed flushes of the per-minute counters (they are kept and retried).", nil, nil)
	descDropped = prometheus.NewDesc("leadpipe_monitor_dropped_events_total",
		"Counter increments dropped because MySQL was unreachable for too long.", nil, nil)
	descAlertsOpen = prometheus.NewDesc("leadpipe_alerts_open",
		"Open alerts (1 per open alert) by tenant, source and rule.", []string{"tenant", "source", "rule"}, nil)
	descQueue = prometheus.NewDesc("leadpipe_queue_depth",
		"Asynq tasks per queue and state.", []string{"queue", "state"}, nil)
	descQueueLatency = prometheus.NewDesc("leadpipe_queue_latency_seconds",
		"Age of the oldest pending task per queue.", []string{"queue"}, nil)
	descAlertsErr = prometheus.NewDesc("leadpipe_alerts_scrape_error",
		"1 when this scrape could not read open alerts from MySQL.", nil, nil)
	descQueueErr = prometheus.NewDesc("leadpipe_queue_scrape_error",
		"1 when this scrape could not read queue depths from Redis in time.", nil, nil)
)

// deliveryCollector reports the Recorder's in-memory cumulative sums, so
// Add never pays for Prometheus bookkeeping.
type deliveryCollector struct {
	r *Recorder

	mu       sync.Mutex
	accepted map[seriesKey]int64 // last reported, to keep it monotonic
}

func (c *deliveryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descDeliveries
	ch <- descReconcile
	ch <- descProcessingFailures
	ch <- descPending
	ch <- descFlushErrors
	ch <- descDropped
}

func (c *deliveryCollector) Collect(ch chan<- prometheus.Metric) {
	totals, pending := c.r.snapshotTotals()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.accepted == nil {
		c.accepted = map[seriesKey]int64{}
	}
	for k, t := range totals {
		// A duplicate is counted as a delivery and a duplicate by two Add
		// calls; a scrape between them must not make "accepted" go down.
		acc := max(t[iDeliveries]-t[iDuplicates], c.accepted[k])
		c.accepted[k] = acc
		counter := func(d *prometheus.Desc, v int64, result string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), k.tenant, k.source, result)
		}
		counter(descDeliveries, acc, "accepted")
		counter(descDeliveries, t[iDuplicates], "duplicate")
		counter(descDeliveries, t[iRejected], "rejected")
		counter(descDeliveries, t[iDeadLetters], "dead_letter")
		if t[iReconcileNew]+t[iReconcileKnown]+t[iBackfill] > 0 {
			counter(descReconcile, t[iReconcileNew], "new")
			counter(descReconcile, t[iReconcileKnown], "known")
			counter(descReconcile, t[iBackfill], "backfill")
		}
		if t[iProcessingFailures] > 0 {
			counter(descProcessingFailures, t[iProcessingFailures], "failed")
		}
	}
	ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(pending))
	ch <- prometheus.MustNewConstMetric(descFlushErrors, prometheus.CounterValue, float64(c.r.flushErrors.Load()))
	ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(c.r.dropped.Load()))
}

// alertCollector reads open alerts from MySQL at scrape time (the
// evaluator may run in another process).
type alertCollector struct {
	db      *sqlx.DB
	timeout time.Duration
	log     *slog.Logger
}

func (c *alertCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descAlertsOpen
	ch <- descAlertsErr
}

func (c *alertCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	rows, err := openAlertsAllTenants(ctx, c.db)
	if err != nil {
		c.log.Warn("metrics: open alerts", "err", err)
		ch <- prometheus.MustNewConstMetric(descAlertsErr, prometheus.GaugeValue, 1)
		return
	}
	ch <- prometheus.MustNewConstMetric(descAlertsErr, prometheus.GaugeValue, 0)
	for _, a := range rows {
		ch <- prometheus.MustNewConstMetric(descAlertsOpen, prometheus.GaugeValue, float64(a.N), a.TenantID, a.SourceID, a.Rule)
	}
}

// queueCollector asks Asynq's Inspector for queue sizes on scrape, with a
// deadline: a slow Redis leaves the series out rather than hanging the
// scrape. At most one inspection runs at a time.
type queueCollector struct {
	insp    *asynq.Inspector
	queues  []string
	timeout time.Duration
	log     *slog.Logger
	busy    sync.Mutex
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descQueue
	ch <- descQueueLatency
	ch <- descQueueErr
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	if !c.busy.TryLock() {
		ch <- prometheus.MustNewConstMetric(descQueueErr, prometheus.GaugeValue, 1)
		return
	}
	res := make(chan []*asynq.QueueInfo, 1)
	go func() {
		defer c.busy.Unlock()
		names := append([]string(nil), c.queues...)
		if more, err := c.insp.Queues(); err == nil {
			for _, q := range more {
				if !slices.Contains(names, q) {
					names = append(names, q)
				}
			}
		}
		var infos []*asynq.QueueInfo
		for _, q := range names {
			info, err := c.insp.GetQueueInfo(q)
			if err != nil {
				// A queue no task was ever enqueued to does not exist yet.
				info = &asynq.QueueInfo{Queue: q}
			}
			infos = append(infos, info)
		}
		res <- infos
	}()
	select {
	case infos := <-res:
		for _, q := range infos {
			for state, n := range map[string]int{"pending": q.Pending, "active": q.Active, "scheduled": q.Scheduled,
				"retry": q.Retry, "archived": q.Archived, "completed": q.Completed, "aggregating": q.Aggregating} {
				ch <- prometheus.MustNewConstMetric(descQueue, prometheus.GaugeValue, float64(n), q.Queue, state)
			}
			ch <- prometheus.MustNewConstMetric(descQueueLatency, prometheus.GaugeValue, q.Latency.Seconds(), q.Queue)
		}
		ch <- prometheus.MustNewConstMetric(descQueueErr, prometheus.GaugeValue, 0)
	case <-time.After(c.timeout):
		c.log.Warn("metrics: queue depth timed out")
		ch <- prometheus.MustNewConstMetric(descQueueErr, prometheus.GaugeValue, 1)
	}
}
