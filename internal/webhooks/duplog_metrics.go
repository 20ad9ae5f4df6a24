package webhooks

import (
	"context"
	"database/sql"
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"

	"leadpipe/internal/db"
)

var (
	descDupLogRows = prometheus.NewDesc("leadpipe_duplicate_log_rows",
		"Rows of the duplicate log waiting for the worker to fold them into deliveries.", nil, nil)
	descDupLogOldest = prometheus.NewDesc("leadpipe_duplicate_log_oldest_seconds",
		"Age of the oldest row of the duplicate log waiting to be folded (0 when it is empty).", nil, nil)
	descDupLogErr = prometheus.NewDesc("leadpipe_duplicate_log_scrape_error",
		"1 when this scrape could not read the duplicate log from MySQL in time.", nil, nil)
)

// dupLogCollector reports the duplicate log's backlog on /metrics, read
// at scrape time (the servers write the log, the worker folds it): rows
// that pile up, or grow old, mean no worker folds them
// (docs/MONITORING.md). A slow MySQL sets the error gauge rather than
// hanging the scrape.
type dupLogCollector struct {
	db      *sqlx.DB
	timeout time.Duration
	log     *slog.Logger
}

// NewDupLogCollector reports the duplicate log's backlog on /metrics, each
// scrape reading d within timeout.
func NewDupLogCollector(d *sqlx.DB, timeout time.Duration, log *slog.Logger) prometheus.Collector {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &dupLogCollector{db: d, timeout: timeout, log: log}
}

func (c *dupLogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descDupLogRows
	ch <- descDupLogOldest
	ch <- descDupLogErr
}

func (c *dupLogCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	rows, oldest, err := dupLogBacklog(ctx, c.db)
	if err != nil {
		c.log.Warn("metrics: duplicate log", "err", err)
		ch <- prometheus.MustNewConstMetric(descDupLogErr, prometheus.GaugeValue, 1)
		return
	}
	age := 0.0
	if oldest.Valid {
		// logged_at is the writing server's Go clock (flushTally), so
		// the age is taken on Go's clock too; a server whose clock runs
		// ahead must not make it negative.
		age = max(time.Since(oldest.Time).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(descDupLogRows, prometheus.GaugeValue, float64(rows))
	ch <- prometheus.MustNewConstMetric(descDupLogOldest, prometheus.GaugeValue, age)
	ch <- prometheus.MustNewConstMetric(descDupLogErr, prometheus.GaugeValue, 0)
}

// dupLogBacklog counts the log's rows across tenants and finds the oldest.
func dupLogBacklog(ctx context.Context, x db.Ext) (int64, sql.NullTime, error) {
	var n int64
	var oldest sql.NullTime
	err := x.QueryRowxContext(ctx, `SELECT COUNT(*), MIN(logged_at) FROM delivery_dup_log`).Scan(&n, &oldest)
	return n, oldest, err
}
