package monitor_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"leadpipe/internal/monitor"
	"leadpipe/internal/monitor/monitortest"
)

// A source that sends its usual volume (120 an hour at this hour of the
// week, four weeks running) and then nothing: `silence` fires once (two
// evaluators racing every minute, the clock injected) before the quiet
// hour is over, with an alert.fired event; it resolves when deliveries
// return. A source with no history and another tenant's source that keeps
// sending never fire.
func TestSilenceFiresOnceAndResolves(t *testing.T) {
	e := monitorEnv(t, "monitor_silence")
	ctx := context.Background()
	svc := e.App.Web.Monitor
	acme, other := e.Tenant("acme"), e.Tenant("other")
	regular, newbie := newSource(t, e, acme.ID, "regular"), newSource(t, e, acme.ID, "newbie")
	steady := newSource(t, e, other.ID, "steady")
	alertHook(t, e, acme)

	quietFrom := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC) // a Monday afternoon
	back := quietFrom.Add(70 * time.Minute)
	usual := func(tenantID, sourceID string, seed uint64) monitortest.Traffic {
		return monitortest.Traffic{TenantID: tenantID, SourceID: sourceID, PerMinute: 2, Seed: seed}
	}
	for k := 1; k <= monitor.SilenceWeeks; k++ { // the same hours in the four weeks before
		wk := quietFrom.Add(-time.Duration(k) * 7 * 24 * time.Hour)
		usual(acme.ID, regular.ID, uint64(k)).Add(e.App.Stats, wk.Add(-2*time.Hour), wk.Add(3*time.Hour))
		usual(other.ID, steady.ID, uint64(10+k)).Add(e.App.Stats, wk.Add(-2*time.Hour), wk.Add(3*time.Hour))
	}
	usual(acme.ID, regular.ID, 20).Add(e.App.Stats, quietFrom.Add(-2*time.Hour), quietFrom) // then nothing
	usual(other.ID, steady.ID, 21).Add(e.App.Stats, quietFrom.Add(-2*time.Hour), quietFrom.Add(2*time.Hour))
	// The new source sends a little, then stops too: it has no usual volume.
	monitortest.Traffic{TenantID: acme.ID, SourceID: newbie.ID, PerMinute: 5}.Add(e.App.Stats, quietFrom.Add(-time.Hour), quietFrom)
	if err := svc.Recorder.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	silences := func(tenantID, state string) []monitor.Alert {
		t.Helper()
		list, _, err := svc.Alerts(ctx, tenantID, state, "", 200)
		if err != nil {
			t.Fatal(err)
		}
		var out []monitor.Alert
		for _, a := range list {
			if a.Rule == monitor.RuleSilence {
				out = append(out, a)
			}
		}
		return out
	}
	var firedAt, resolvedAt time.Time
	for m := 0; m <= 100; m++ {
		now := quietFrom.Add(time.Duration(m)*time.Minute + 5*time.Second)
		if now.After(back) {
			// Deliveries return at the usual pace, minute by minute.
			usual(acme.ID, regular.ID, 30+uint64(m)).Add(e.App.Stats, now.Add(-time.Minute).Truncate(time.Minute), now.Truncate(time.Minute))
			if err := svc.Recorder.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := racing(2, func(int) error { return svc.Evaluate(ctx, now) }); err != nil { // two evaluators race
			t.Fatalf("minute %d: %v", m, err)
		}
		all := silences(acme.ID, monitor.StateAll)
		if len(all) > 1 {
			t.Fatalf("minute %d: %d silence alerts: %+v", m, len(all), all)
		}
		if len(all) == 1 && firedAt.IsZero() {
			firedAt = all[0].FiredAt
		}
		if len(all) == 1 && all[0].State == monitor.StateResolved && resolvedAt.IsZero() {
			resolvedAt = *all[0].ResolvedAt
		}
	}
	if firedAt.IsZero() {
		t.Fatal("the quiet source raised no silence alert")
	}
	t.Logf("silence fired %v after the last delivery, resolved %v after deliveries came back", firedAt.Sub(quietFrom), resolvedAt.Sub(back))
	if firedAt.Before(quietFrom.Add(30*time.Minute)) || firedAt.After(quietFrom.Add(time.Hour)) {
		t.Errorf("fired at %v: want within the quiet hour, once the last hour is below a fifth of the usual", firedAt.Sub(quietFrom))
	}
	if resolvedAt.IsZero() || resolvedAt.Before(back) || resolvedAt.After(back.Add(20*time.Minute)) {
		t.Errorf("resolved at %v (deliveries back at %v)", resolvedAt, back)
	}
	a := silences(acme.ID, monitor.StateAll)[0]
	if a.SourceID != regular.ID || !strings.Contains(a.Summary(), "usually 120 at this hour of the week") {
		t.Errorf("alert %s on %s: %q", a.Rule, a.SourceID, a.Summary())
	}
	var fired int
	if err := e.App.DB.GetContext(ctx, &fired, `SELECT COUNT(*) FROM events WHERE tenant_id = ? AND type = 'alert.fired' AND resource_id = ?`, acme.ID, a.ID); err != nil {
		t.Fatal(err)
	}
	if fired != 1 {
		t.Errorf("%d alert.fired events for the silence alert, want 1", fired)
	}
	if n := len(silences(other.ID, monitor.StateAll)); n != 0 {
		t.Errorf("the other tenant's steady source has %d silence alerts", n)
	}
}

// The rule itself: a fifth of the usual volume is the line, and a usual
// volume under 20 an hour (no history) never fires.
func TestSilenceRule(t *testing.T) {
	r := monitor.DefaultRules("src")
	for _, c := range []struct {
		last  int64
		usual float64
		fire  bool
	}{
		{0, 0, false},     // no history
		{0, 19.75, false}, // too little history
		{0, 20, true},
		{23, 120, true},
		{24, 120, false},
		{500, 120, false},
	} {
		if got := monitor.CheckSilenceForTest(r, c.last, c.usual); got != c.fire {
			t.Errorf("last %d, usual %v: fire %v, want %v", c.last, c.usual, got, c.fire)
		}
	}
	r.SilenceEnabled = false
	if monitor.CheckSilenceForTest(r, 0, 500) {
		t.Error("a disabled rule fired")
	}
	r = monitor.DefaultRules("src")
	r.SilenceFraction = 0
	if f := r.Validate(); f["silence_fraction"] == "" {
		t.Errorf("fraction 0 accepted: %v", f)
	}
}
