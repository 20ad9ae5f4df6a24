package monitor

import "testing"

func c(del, dup, rej, dl, rnew int64) counts { return counts{del, dup, rej, dl, rnew, 0} }

func TestRuleChecks(t *testing.T) {
	r := DefaultRules("S")
	off := r
	off.SpikeEnabled, off.RejectionsEnabled, off.DeadLettersEnabled, off.LossEnabled = false, false, false, false
	base := c(100_000, 2_000, 96, 0, 0) // 2% duplicates, 1 rejection per 15 min
	cases := []struct {
		name  string
		r     Rules
		rule  string
		win   counts
		fires bool
	}{
		{"steady 2%", r, RuleDuplicateSpike, c(1500, 30, 0, 0, 0), false},
		{"storm 40%", r, RuleDuplicateSpike, c(1500, 600, 0, 0, 0), true},
		{"3x but under +10 points", r, RuleDuplicateSpike, c(1500, 105, 0, 0, 0), false}, // 7%
		{"just above 12%", r, RuleDuplicateSpike, c(1000, 121, 0, 0, 0), true},
		{"exactly the threshold", r, RuleDuplicateSpike, c(1000, 120, 0, 0, 0), false},
		{"too little volume", r, RuleDuplicateSpike, c(49, 40, 0, 0, 0), false},
		{"disabled", off, RuleDuplicateSpike, c(1500, 600, 0, 0, 0), false},
		{"rejections usual", r, RuleSignatureRejections, c(0, 0, 2, 0, 0), false},
		{"rejections rising", r, RuleSignatureRejections, c(0, 0, 25, 0, 0), true},
		{"rejections under min", r, RuleSignatureRejections, c(0, 0, 19, 0, 0), false},
		{"dead letter", r, RuleDeadLetters, c(0, 0, 0, 1, 0), true},
		{"no dead letter", r, RuleDeadLetters, c(10, 0, 0, 0, 0), false},
		{"webhook loss", r, RuleWebhookLoss, c(0, 0, 0, 0, 2), true},
		{"loss disabled", off, RuleWebhookLoss, c(0, 0, 0, 0, 2), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fire, detail := tc.r.check(tc.rule, tc.win, base)
			if fire != tc.fires {
				t.Fatalf("fire=%v want %v: %v", fire, tc.fires, detail)
			}
			if detail["summary"] == "" {
				t.Fatal("no summary")
			}
		})
	}
	// A new source without a baseline: 10 points over nothing.
	if fire, _ := r.check(RuleDuplicateSpike, c(100, 11, 0, 0, 0), counts{}); !fire {
		t.Fatal("11% on a new source should fire")
	}
	// A busy source with a high normal rate needs 3x that rate.
	if fire, _ := r.check(RuleDuplicateSpike, c(1000, 500, 0, 0, 0), c(10000, 2000, 0, 0, 0)); fire {
		t.Fatal("50% against a 20% normal is under 3x")
	}
}

func TestRulesValidate(t *testing.T) {
	if f := DefaultRules("S").Validate(); f != nil {
		t.Fatalf("defaults invalid: %v", f)
	}
	r := DefaultRules("S")
	r.WindowSeconds, r.SpikeFactor, r.SpikeMinPoints, r.LossMin = 90, 0.5, 2, 0
	f := r.Validate()
	for _, k := range []string{"window_seconds", "spike_factor", "spike_min_points", "loss_min"} {
		if f[k] == "" {
			t.Errorf("%s not reported: %v", k, f)
		}
	}
	r = DefaultRules("S")
	r.WindowSeconds, r.BaselineSeconds = 3600, 3600
	if f := r.Validate(); f["baseline_seconds"] == "" {
		t.Fatalf("baseline shorter than two windows: %v", f)
	}
}

func TestRollupAlignsBuckets(t *testing.T) {
	b := map[minuteKey]*counts{
		{"T", "S", 29_000_000}: {1}, {"T", "S", 29_000_001}: {2}, {"T", "S", 29_000_100}: {4},
	}
	h := rollup(b, 3600)
	if len(h) != 2 || h[0].bucket%3600 != 0 || h[0].c[0]+h[1].c[0] != 7 {
		t.Fatalf("hours %+v", h)
	}
	if d := rollup(b, 86400); len(d) != 1 || d[0].c[0] != 7 || d[0].bucket%86400 != 0 {
		t.Fatalf("days %+v", d)
	}
	if floorDiv(-1, 60) != -1 || floorDiv(59, 60) != 0 {
		t.Fatal("floorDiv")
	}
}
