package monitor

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/ids"
	"leadpipe/internal/keyset"
)

// Statistics tables by granularity.
const (
	tableMinute = "source_stats_minute"
	tableHour   = "source_stats_hour"
	tableDay    = "source_stats_day"
)

// sumCols is "SUM(deliveries), SUM(duplicates), …" in counter order.
var sumCols = func() string {
	var b strings.Builder
	for i, c := range counterNames {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("SUM(" + c + ")")
	}
	return b.String()
}()

func scanCounts(rows *sql.Rows, head ...any) (counts, error) {
	var c counts
	dest := head
	for i := range c {
		dest = append(dest, &c[i])
	}
	err := rows.Scan(dest...)
	return c, err
}

// seriesRows sums one source's rows of table (granularity gran seconds)
// into buckets of step seconds (aligned to the Unix epoch) within
// [from, to). Up to a few rows per bucket it reads the rows and adds them
// up here (a plain primary-key range, ~5x faster than GROUP BY on an
// expression, which needs a temporary table); beyond that MySQL groups.
func seriesRows(ctx context.Context, x db.Ext, table string, gran int64, tenantID, sourceID string, from, to time.Time, step int64) (map[int64]counts, error) {
	out := map[int64]counts{}
	rowsEstimate := (to.Unix() - from.Unix()) / gran
	if rowsEstimate <= 20000 {
		err := eachCounts(ctx, x, func(b time.Time, c counts) {
			k := floorDiv(b.Unix(), step) * step
			sum := out[k]
			sum.add(&c)
			out[k] = sum
		}, `SELECT bucket, `+statColumns+`
FROM `+table+` WHERE tenant_id = ? AND source_id = ? AND bucket >= ? AND bucket < ?`, tenantID, sourceID, from.UTC(), to.UTC())
		return out, err
	}
	q := `SELECT FLOOR(TIMESTAMPDIFF(SECOND, '1970-01-01 00:00:00', bucket) / ?) AS b, ` + sumCols + `
FROM ` + table + ` WHERE tenant_id = ? AND source_id = ? AND bucket >= ? AND bucket < ? GROUP BY b`
	err := eachCounts(ctx, x, func(b int64, c counts) { out[b*step] = c }, q, step, tenantID, sourceID, from.UTC(), to.UTC())
	return out, err
}

// eachCounts runs q and gives add each row: its first column, the key,
// and the counters after it. On an error what add was given is partial:
// the callers' maps are then not to be used.
func eachCounts[K any](ctx context.Context, x db.Ext, add func(key K, c counts), q string, args ...any) error {
	rows, err := x.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k K
		c, err := scanCounts(rows, &k)
		if err != nil {
			return err
		}
		add(k, c)
	}
	return rows.Err()
}

// sumRange sums counters per source over [from, to) (minute-aligned),
// reading whole hours from the hourly table and only the ragged ends from
// the per-minute one: a 24 h baseline costs at most ~24 + 120 rows per
// source.
func sumRange(ctx context.Context, x db.Ext, tenantID string, sourceIDs []string, from, to time.Time) (map[string]counts, error) {
	out := map[string]counts{}
	if len(sourceIDs) == 0 || !from.Before(to) {
		return out, nil
	}
	from, to = from.UTC(), to.UTC()
	type part struct {
		table    string
		from, to time.Time
	}
	var parts []part
	hFrom, hTo := ceilTime(from, time.Hour), to.Truncate(time.Hour)
	if hFrom.Before(hTo) {
		parts = append(parts, part{tableMinute, from, hFrom}, part{tableHour, hFrom, hTo}, part{tableMinute, hTo, to})
	} else {
		parts = append(parts, part{tableMinute, from, to})
	}
	var sub []string
	var args []any
	for _, p := range parts {
		if !p.from.Before(p.to) {
			continue
		}
		q, a, err := sqlx.In(`SELECT source_id, `+statColumns+`
FROM `+p.table+` WHERE tenant_id = ? AND source_id IN (?) AND bucket >= ? AND bucket < ?`, tenantID, sourceIDs, p.from, p.to)
		if err != nil {
			return nil, err
		}
		sub = append(sub, q)
		args = append(args, a...)
	}
	q := `SELECT source_id, ` + sumCols + ` FROM (` + strings.Join(sub, " UNION ALL ") + `) t GROUP BY source_id`
	err := eachCounts(ctx, x, func(id string, c counts) { out[id] = c }, q, args...)
	return out, err
}

func ceilTime(t time.Time, d time.Duration) time.Time {
	f := t.Truncate(d)
	if f.Equal(t) {
		return f
	}
	return f.Add(d)
}

type hourRow struct {
	SourceID   string    `db:"source_id"`
	Bucket     time.Time `db:"bucket"`
	Deliveries int64     `db:"deliveries"`
	Duplicates int64     `db:"duplicates"`
}

func hourRows(ctx context.Context, x db.Ext, tenantID string, sourceIDs []string, from, to time.Time) ([]hourRow, error) {
	if len(sourceIDs) == 0 {
		return nil, nil
	}
	var out []hourRow
	return out, db.SelectIn(ctx, x, &out, `SELECT source_id, bucket, deliveries, duplicates FROM `+tableHour+`
WHERE tenant_id = ? AND source_id IN (?) AND bucket >= ? AND bucket < ?`, tenantID, sourceIDs, from.UTC(), to.UTC())
}

// purgeStats deletes one source's rows older than before, in small
// batches so no long lock is held.
func purgeStats(ctx context.Context, x db.Ext, table, tenantID, sourceID string, before time.Time) (int64, error) {
	var total int64
	for {
		res, err := x.ExecContext(ctx, `DELETE FROM `+table+` WHERE tenant_id = ? AND source_id = ? AND bucket < ? LIMIT 5000`,
			tenantID, sourceID, before.UTC())
		if err != nil {
			return total, err
		}
		n, _ := res.RowsAffected()
		total += n
		if n < 5000 {
			return total, nil
		}
	}
}

// --- rules ---

const rulesCols = `source_id, window_s, baseline_s, spike_enabled, spike_factor, spike_min_points, spike_min_deliveries,
 rejections_enabled, rejections_min, rejections_factor, dead_letters_enabled, dead_letters_min, loss_enabled, loss_min,
 failures_enabled, failures_min, silence_enabled, silence_fraction, updated_at, updated_by`

type rulesRow struct {
	SourceID           string    `db:"source_id"`
	WindowS            int       `db:"window_s"`
	BaselineS          int       `db:"baseline_s"`
	SpikeEnabled       bool      `db:"spike_enabled"`
	SpikeFactor        float64   `db:"spike_factor"`
	SpikeMinPoints     float64   `db:"spike_min_points"`
	SpikeMinDeliveries int       `db:"spike_min_deliveries"`
	RejectionsEnabled  bool      `db:"rejections_enabled"`
	RejectionsMin      int       `db:"rejections_min"`
	RejectionsFactor   float64   `db:"rejections_factor"`
	DeadLettersEnabled bool      `db:"dead_letters_enabled"`
	DeadLettersMin     int       `db:"dead_letters_min"`
	LossEnabled        bool      `db:"loss_enabled"`
	LossMin            int       `db:"loss_min"`
	FailuresEnabled    bool      `db:"failures_enabled"`
	FailuresMin        int       `db:"failures_min"`
	SilenceEnabled     bool      `db:"silence_enabled"`
	SilenceFraction    float64   `db:"silence_fraction"`
	UpdatedAt          time.Time `db:"updated_at"`
	UpdatedBy          *string   `db:"updated_by"`
}

func (r rulesRow) rules() Rules {
	at := r.UpdatedAt
	return Rules{SourceID: r.SourceID, WindowSeconds: r.WindowS, BaselineSeconds: r.BaselineS,
		SpikeEnabled: r.SpikeEnabled, SpikeFactor: r.SpikeFactor, SpikeMinPoints: r.SpikeMinPoints, SpikeMinDeliveries: r.SpikeMinDeliveries,
		RejectionsEnabled: r.RejectionsEnabled, RejectionsMin: r.RejectionsMin, RejectionsFactor: r.RejectionsFactor,
		DeadLettersEnabled: r.DeadLettersEnabled, DeadLettersMin: r.DeadLettersMin,
		LossEnabled: r.LossEnabled, LossMin: r.LossMin, FailuresEnabled: r.FailuresEnabled, FailuresMin: r.FailuresMin,
		SilenceEnabled: r.SilenceEnabled, SilenceFraction: r.SilenceFraction,
		UpdatedAt: &at, UpdatedBy: r.UpdatedBy}
}

func getRules(ctx context.Context, x db.Ext, tenantID, sourceID string) (Rules, error) {
	var r rulesRow
	err := x.GetContext(ctx, &r, `SELECT `+rulesCols+` FROM alert_rules WHERE tenant_id = ? AND source_id = ?`, tenantID, sourceID)
	if err == sql.ErrNoRows {
		return DefaultRules(sourceID), nil
	}
	if err != nil {
		return Rules{}, err
	}
	return r.rules(), nil
}

func listRules(ctx context.Context, x db.Ext, tenantID string) (map[string]Rules, error) {
	var rows []rulesRow
	if err := x.SelectContext(ctx, &rows, `SELECT `+rulesCols+` FROM alert_rules WHERE tenant_id = ?`, tenantID); err != nil {
		return nil, err
	}
	out := make(map[string]Rules, len(rows))
	for _, r := range rows {
		out[r.SourceID] = r.rules()
	}
	return out, nil
}

func upsertRules(ctx context.Context, x db.Ext, tenantID string, r Rules, at time.Time, by string) error {
	_, err := x.ExecContext(ctx, `INSERT INTO alert_rules (tenant_id, `+rulesCols+`)
VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
ON DUPLICATE KEY UPDATE window_s = VALUES(window_s), baseline_s = VALUES(baseline_s),
 spike_enabled = VALUES(spike_enabled), spike_factor = VALUES(spike_factor), spike_min_points = VALUES(spike_min_points),
 spike_min_deliveries = VALUES(spike_min_deliveries), rejections_enabled = VALUES(rejections_enabled),
 rejections_min = VALUES(rejections_min), rejections_factor = VALUES(rejections_factor),
 dead_letters_enabled = VALUES(dead_letters_enabled), dead_letters_min = VALUES(dead_letters_min),
 loss_enabled = VALUES(loss_enabled), loss_min = VALUES(loss_min),
 failures_enabled = VALUES(failures_enabled), failures_min = VALUES(failures_min),
 silence_enabled = VALUES(silence_enabled), silence_fraction = VALUES(silence_fraction), updated_at = VALUES(updated_at), updated_by = VALUES(updated_by)`,
		tenantID, r.SourceID, r.WindowSeconds, r.BaselineSeconds, r.SpikeEnabled, r.SpikeFactor, r.SpikeMinPoints, r.SpikeMinDeliveries,
		r.RejectionsEnabled, r.RejectionsMin, r.RejectionsFactor, r.DeadLettersEnabled, r.DeadLettersMin, r.LossEnabled, r.LossMin,
		r.FailuresEnabled, r.FailuresMin, r.SilenceEnabled, r.SilenceFraction, at, nullString(by))
	return err
}

func deleteRules(ctx context.Context, x db.Ext, tenantID, sourceID string) error {
	_, err := x.ExecContext(ctx, `DELETE FROM alert_rules WHERE tenant_id = ? AND source_id = ?`, tenantID, sourceID)
	return err
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// --- alerts ---

const alertCols = `tenant_id, id, source_id, rule, state, fired_at, clear_since, resolved_at, acknowledged_at, acknowledged_by, detail`

func insertAlert(ctx context.Context, x db.Ext, a Alert) error {
	_, err := x.ExecContext(ctx, `INSERT INTO alerts (tenant_id, id, source_id, rule, state, open_key, fired_at, detail)
VALUES (?, ?, ?, ?, ?, 1, ?, ?)`, a.TenantID, a.ID, a.SourceID, a.Rule, StateOpen, a.FiredAt, string(a.Detail))
	return err
}

type alertEvent struct {
	TenantID string          `db:"tenant_id"`
	ID       string          `db:"id"`
	AlertID  string          `db:"alert_id"`
	SourceID string          `db:"source_id"`
	Rule     string          `db:"rule"`
	Type     string          `db:"type"`
	At       time.Time       `db:"at"`
	Actor    *string         `db:"actor"`
	Detail   json.RawMessage `db:"detail"`
}

func insertEvent(ctx context.Context, x db.Ext, a Alert, typ string, at time.Time, actor string, detail json.RawMessage) error {
	if len(detail) == 0 {
		detail = json.RawMessage("{}")
	}
	_, err := x.ExecContext(ctx, `INSERT INTO alert_events (tenant_id, id, alert_id, source_id, rule, type, at, actor, detail)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, a.TenantID, ids.New(), a.ID, a.SourceID, a.Rule, typ, at, nullString(actor), string(detail))
	return err
}

func listEvents(ctx context.Context, x db.Ext, tenantID, alertID string) ([]AlertEvent, error) {
	var out []AlertEvent
	err := x.SelectContext(ctx, &out, `SELECT id, alert_id, type, at, actor, detail FROM alert_events
WHERE tenant_id = ? AND alert_id = ? ORDER BY id`, tenantID, alertID)
	return out, err
}

func getAlert(ctx context.Context, x db.Ext, tenantID, id string, forUpdate bool) (Alert, error) {
	q := `SELECT ` + alertCols + ` FROM alerts WHERE tenant_id = ? AND id = ?`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	var a Alert
	err := x.GetContext(ctx, &a, q, tenantID, id)
	return a, db.MapErr(err, "alert not found", "")
}

func listOpenAlerts(ctx context.Context, x db.Ext, tenantID string) ([]Alert, error) {
	var out []Alert
	err := x.SelectContext(ctx, &out, `SELECT `+alertCols+` FROM alerts WHERE tenant_id = ? AND state = 'open' ORDER BY id DESC`, tenantID)
	return out, err
}

func listAlerts(ctx context.Context, x db.Ext, tenantID, state, before string, limit int) ([]Alert, error) {
	q, args := keyset.New(`SELECT `+alertCols+` FROM alerts WHERE tenant_id = ?`, tenantID).
		And(state != StateAll, "state = ?", state).
		Page(before, limit)
	var out []Alert
	err := x.SelectContext(ctx, &out, q, args...)
	return out, err
}

func countOpenAlerts(ctx context.Context, x db.Ext, tenantID string) (open, unacked int, err error) {
	err = x.QueryRowxContext(ctx, `SELECT COUNT(*), COALESCE(SUM(acknowledged_at IS NULL), 0) FROM alerts
WHERE tenant_id = ? AND state = 'open'`, tenantID).Scan(&open, &unacked)
	return
}

func setClearSince(ctx context.Context, x db.Ext, tenantID, id string, at *time.Time) error {
	_, err := x.ExecContext(ctx, `UPDATE alerts SET clear_since = ? WHERE tenant_id = ? AND id = ? AND state = 'open'`, at, tenantID, id)
	return err
}

func setDetail(ctx context.Context, x db.Ext, tenantID, id string, detail json.RawMessage) error {
	_, err := x.ExecContext(ctx, `UPDATE alerts SET detail = ?, clear_since = NULL WHERE tenant_id = ? AND id = ? AND state = 'open'`,
		string(detail), tenantID, id)
	return err
}

// resolveAlert closes an open alert; false when another evaluator was first.
func resolveAlert(ctx context.Context, x db.Ext, tenantID, id string, at time.Time) (bool, error) {
	res, err := x.ExecContext(ctx, `UPDATE alerts SET state = 'resolved', open_key = NULL, resolved_at = ?, clear_since = NULL
WHERE tenant_id = ? AND id = ? AND state = 'open'`, at, tenantID, id)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func ackAlert(ctx context.Context, x db.Ext, tenantID, id string, at time.Time, by string) error {
	_, err := x.ExecContext(ctx, `UPDATE alerts SET acknowledged_at = ?, acknowledged_by = ?
WHERE tenant_id = ? AND id = ? AND acknowledged_at IS NULL`, at, nullString(by), tenantID, id)
	return err
}

type openAlertCount struct {
	TenantID string `db:"tenant_id"`
	SourceID string `db:"source_id"`
	Rule     string `db:"rule"`
	N        int    `db:"n"`
}

// openAlertsAllTenants is the operator's view for /metrics (the one query
// across tenants; it runs per scrape, not per request).
func openAlertsAllTenants(ctx context.Context, x db.Ext) ([]openAlertCount, error) {
	var out []openAlertCount
	err := x.SelectContext(ctx, &out, `SELECT tenant_id, source_id, rule, COUNT(*) AS n FROM alerts
WHERE state = 'open' GROUP BY tenant_id, source_id, rule`)
	if err != nil {
		return nil, fmt.Errorf("open alerts: %w", err)
	}
	return out, nil
}
