package monitor

import (
	"fmt"
	"time"
)

// Alert rule names.
const (
	RuleDuplicateSpike      = "duplicate_spike"
	RuleSignatureRejections = "signature_rejections"
	RuleDeadLetters         = "dead_letters"
	RuleWebhookLoss         = "webhook_loss"
	RuleProcessingFailures  = "processing_failures"
	// RuleSilence: a source that usually sends at this hour of the week
	// went quiet (see Rules.Silence*).
	RuleSilence = "silence"
)

// RuleNames lists every rule in display order.
var RuleNames = []string{RuleDuplicateSpike, RuleSignatureRejections, RuleDeadLetters, RuleWebhookLoss, RuleProcessingFailures, RuleSilence}

// Rules are one source's alert settings. Every rule looks at the last
// WindowSeconds of complete minutes; the spike and rejection rules compare
// it with the BaselineSeconds before the window (the source's own
// trailing normal). An alert resolves once its condition has been false
// for a whole window.
type Rules struct {
	SourceID        string `json:"source_id"`
	WindowSeconds   int    `json:"window_seconds"`
	BaselineSeconds int    `json:"baseline_seconds"`

	// Duplicate-rate spike: window rate > factor × baseline rate AND >
	// baseline + min_points, with at least min_deliveries in the window.
	SpikeEnabled       bool    `json:"spike_enabled"`
	SpikeFactor        float64 `json:"spike_factor"`
	SpikeMinPoints     float64 `json:"spike_min_points"` // 0.10 = 10 percentage points
	SpikeMinDeliveries int     `json:"spike_min_deliveries"`

	// Rising signature rejections: at least min in the window AND more
	// than factor × the baseline's rejections per window.
	RejectionsEnabled bool    `json:"rejections_enabled"`
	RejectionsMin     int     `json:"rejections_min"`
	RejectionsFactor  float64 `json:"rejections_factor"`

	// Dead letters present: at least min in the window.
	DeadLettersEnabled bool `json:"dead_letters_enabled"`
	DeadLettersMin     int  `json:"dead_letters_min"`

	// Webhook loss: reconcile found at least min records the webhooks
	// never delivered, in the window.
	LossEnabled bool `json:"loss_enabled"`
	LossMin     int  `json:"loss_min"`

	// Processing failures: at least min deliveries marked failed (no
	// natural key, misconfigured source, retries used up) in the window.
	FailuresEnabled bool `json:"failures_enabled"`
	FailuresMin     int  `json:"failures_min"`

	// Silence: the deliveries of the last hour fall below fraction × the
	// source's usual volume for that hour of the week (the same hour in
	// each of the trailing SilenceWeeks weeks, averaged), when that usual
	// volume is at least SilenceMinUsual: a source with no history never
	// fires. It resolves as soon as the last hour is back above the line.
	SilenceEnabled  bool    `json:"silence_enabled"`
	SilenceFraction float64 `json:"silence_fraction"`

	Default   bool       `json:"default"` // true when nothing was saved for the source
	UpdatedAt *time.Time `json:"updated_at"`
	UpdatedBy *string    `json:"updated_by"`
}

// DefaultRules are used for a source without saved rules.
func DefaultRules(sourceID string) Rules {
	return Rules{SourceID: sourceID, WindowSeconds: 900, BaselineSeconds: 86400,
		SpikeEnabled: true, SpikeFactor: 3, SpikeMinPoints: 0.10, SpikeMinDeliveries: 50,
		RejectionsEnabled: true, RejectionsMin: 20, RejectionsFactor: 3,
		DeadLettersEnabled: true, DeadLettersMin: 1,
		LossEnabled: true, LossMin: 1,
		FailuresEnabled: true, FailuresMin: 1,
		SilenceEnabled: true, SilenceFraction: 0.2,
		Default: true}
}

// Window is the evaluation window.
func (r Rules) Window() time.Duration { return time.Duration(r.WindowSeconds) * time.Second }

// Baseline is the trailing period the window is compared with.
func (r Rules) Baseline() time.Duration { return time.Duration(r.BaselineSeconds) * time.Second }

// SpikeThreshold is the duplicate rate above which the spike rule fires
// for a given baseline rate (what a chart draws as the alert line).
func (r Rules) SpikeThreshold(baselineRate float64) float64 {
	return max(r.SpikeFactor*baselineRate, baselineRate+r.SpikeMinPoints)
}

// Validate returns the offending fields (nil when valid).
func (r Rules) Validate() map[string]string {
	f := map[string]string{}
	if r.WindowSeconds < 60 || r.WindowSeconds > 86400 || r.WindowSeconds%60 != 0 {
		f["window_seconds"] = "must be a whole number of minutes between 60 and 86400"
	}
	if r.BaselineSeconds < 3600 || r.BaselineSeconds > 30*86400 || r.BaselineSeconds%60 != 0 {
		f["baseline_seconds"] = "must be a whole number of minutes between 3600 and 2592000"
	} else if r.BaselineSeconds < 2*r.WindowSeconds {
		f["baseline_seconds"] = "must be at least twice window_seconds"
	}
	if r.SpikeFactor < 1 || r.SpikeFactor > 1000 {
		f["spike_factor"] = "must be between 1 and 1000"
	}
	if r.SpikeMinPoints < 0 || r.SpikeMinPoints > 1 {
		f["spike_min_points"] = "must be between 0 and 1 (a fraction: 0.10 = 10 points)"
	}
	for name, n := range map[string]int{"spike_min_deliveries": r.SpikeMinDeliveries, "rejections_min": r.RejectionsMin,
		"dead_letters_min": r.DeadLettersMin, "loss_min": r.LossMin, "failures_min": r.FailuresMin} {
		if n < 1 || n > 1_000_000_000 {
			f[name] = "must be at least 1"
		}
	}
	if r.RejectionsFactor < 1 || r.RejectionsFactor > 1000 {
		f["rejections_factor"] = "must be between 1 and 1000"
	}
	if r.SilenceFraction <= 0 || r.SilenceFraction > 1 {
		f["silence_fraction"] = "must be more than 0 and at most 1 (a fraction: 0.2 = a fifth of the usual volume)"
	}
	if len(f) == 0 {
		return nil
	}
	return f
}

// The silence rule's fixed parts: the usual volume of an hour of the week
// is averaged over the trailing SilenceWeeks weeks and must be at least
// SilenceMinUsual deliveries.
const (
	SilenceWeeks    = 4
	SilenceMinUsual = 20
)

// checkSilence evaluates the silence rule: last is the deliveries of the
// last hour, usual the average of the same hour in the trailing weeks.
func (r Rules) checkSilence(last int64, usual float64) (bool, map[string]any) {
	line := r.SilenceFraction * usual
	fire := r.SilenceEnabled && usual >= SilenceMinUsual && float64(last) < line
	return fire, map[string]any{"deliveries": last, "usual": round6(usual), "fraction": r.SilenceFraction,
		"threshold": round6(line), "missing": round6(max(usual-float64(last), 0)),
		"summary": fmt.Sprintf("%s in the last hour; usually %.0f at this hour of the week", count(last, "delivery", "deliveries"), usual)}
}

// Rate is duplicates / deliveries, 0 without deliveries.
func Rate(duplicates, deliveries int64) float64 {
	if deliveries <= 0 {
		return 0
	}
	return float64(duplicates) / float64(deliveries)
}

// check evaluates one rule over the window and baseline sums. detail
// describes the values behind the decision (stored with the alert).
func (r Rules) check(rule string, win, base counts) (bool, map[string]any) {
	w, b := float64(r.WindowSeconds), float64(r.BaselineSeconds)
	switch rule {
	case RuleDuplicateSpike:
		rate, baseRate := Rate(win[iDuplicates], win[iDeliveries]), Rate(base[iDuplicates], base[iDeliveries])
		thr := r.SpikeThreshold(baseRate)
		fire := r.SpikeEnabled && win[iDeliveries] >= int64(r.SpikeMinDeliveries) && rate > thr
		return fire, map[string]any{"window_seconds": r.WindowSeconds, "baseline_seconds": r.BaselineSeconds,
			"deliveries": win[iDeliveries], "duplicates": win[iDuplicates], "rate": round6(rate),
			"baseline_rate": round6(baseRate), "threshold": round6(thr),
			"summary": fmt.Sprintf("duplicate rate %.1f%% over %s vs %.1f%% baseline (threshold %.1f%%)",
				100*rate, human(r.Window()), 100*baseRate, 100*thr)}
	case RuleSignatureRejections:
		expected := float64(base[iRejected]) * w / b // baseline rejections per window
		thr := max(float64(r.RejectionsMin), r.RejectionsFactor*expected)
		fire := r.RejectionsEnabled && win[iRejected] >= int64(r.RejectionsMin) && float64(win[iRejected]) > r.RejectionsFactor*expected
		return fire, map[string]any{"window_seconds": r.WindowSeconds, "rejected": win[iRejected],
			"baseline_per_window": round6(expected), "threshold": round6(thr),
			"summary": fmt.Sprintf("%s in %s (usually %.1f)", count(win[iRejected], "signature rejection", "signature rejections"), human(r.Window()), expected)}
	case RuleDeadLetters:
		fire := r.DeadLettersEnabled && win[iDeadLetters] >= int64(r.DeadLettersMin)
		return fire, map[string]any{"window_seconds": r.WindowSeconds, "dead_letters": win[iDeadLetters],
			"threshold": r.DeadLettersMin,
			"summary":   fmt.Sprintf("%s in %s", count(win[iDeadLetters], "dead letter", "dead letters"), human(r.Window()))}
	case RuleWebhookLoss:
		fire := r.LossEnabled && win[iReconcileNew] >= int64(r.LossMin)
		return fire, map[string]any{"window_seconds": r.WindowSeconds, "reconcile_new": win[iReconcileNew],
			"reconcile_known": win[iReconcileKnown], "threshold": r.LossMin,
			"summary": fmt.Sprintf("reconcile found %s the webhooks never delivered in %s", count(win[iReconcileNew], "record", "records"), human(r.Window()))}
	case RuleProcessingFailures:
		fire := r.FailuresEnabled && win[iProcessingFailures] >= int64(r.FailuresMin)
		return fire, map[string]any{"window_seconds": r.WindowSeconds, "processing_failures": win[iProcessingFailures],
			"threshold": r.FailuresMin,
			"summary":   fmt.Sprintf("%s failed processing in %s", count(win[iProcessingFailures], "delivery", "deliveries"), human(r.Window()))}
	}
	return false, nil
}

func round6(f float64) float64 {
	const p = 1e6
	if f >= 0 {
		return float64(int64(f*p+0.5)) / p
	}
	return -float64(int64(-f*p+0.5)) / p
}

// count is "1 dead letter" or "3 dead letters".
func count(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func human(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%d h", int(d/time.Hour))
	default:
		return fmt.Sprintf("%d min", int(d/time.Minute))
	}
}
