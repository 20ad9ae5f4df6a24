package web

import (
	"net/url"
	"strconv"
	"strings"

	"leadpipe/internal/monitor"
	monviews "leadpipe/views/monitor"
)

// rulesFormOf fills the form from saved (or default) rules.
func rulesFormOf(r monitor.Rules) monviews.RulesForm {
	f := monviews.RulesForm{Values: map[string]string{
		"window_minutes":       strconv.Itoa(r.WindowSeconds / 60),
		"baseline_hours":       trimFloat(float64(r.BaselineSeconds) / 3600),
		"spike_factor":         trimFloat(r.SpikeFactor),
		"spike_min_points":     trimFloat(r.SpikeMinPoints * 100),
		"spike_min_deliveries": strconv.Itoa(r.SpikeMinDeliveries),
		"rejections_min":       strconv.Itoa(r.RejectionsMin),
		"rejections_factor":    trimFloat(r.RejectionsFactor),
		"dead_letters_min":     strconv.Itoa(r.DeadLettersMin),
		"loss_min":             strconv.Itoa(r.LossMin),
		"silence_percent":      trimFloat(r.SilenceFraction * 100),
	}, On: map[string]bool{
		"spike": r.SpikeEnabled, "rejections": r.RejectionsEnabled, "dead_letters": r.DeadLettersEnabled, "loss": r.LossEnabled,
		"silence": r.SilenceEnabled,
	}, Errors: map[string]string{}, Default: r.Default}
	return f
}

var ruleFields = []string{"window_minutes", "baseline_hours", "spike_factor", "spike_min_points", "spike_min_deliveries",
	"rejections_min", "rejections_factor", "dead_letters_min", "loss_min", "silence_percent"}

// rulesFormFromPost reads a submitted form.
func rulesFormFromPost(v url.Values) monviews.RulesForm {
	f := monviews.RulesForm{Values: map[string]string{}, On: map[string]bool{}, Errors: map[string]string{}}
	for _, k := range ruleFields {
		f.Values[k] = strings.TrimSpace(v.Get(k))
	}
	for _, k := range []string{"spike", "rejections", "dead_letters", "loss", "silence"} {
		f.On[k] = v.Get(k+"_enabled") != ""
	}
	return f
}

// applyRulesForm sets the form's values on cur (fields the form does not know stay
// as they are). It reports false, with Errors filled, when a value is not
// a number.
func applyRulesForm(f *monviews.RulesForm, cur monitor.Rules) (monitor.Rules, bool) {
	r := cur
	num := func(k string) float64 {
		x, err := strconv.ParseFloat(strings.ReplaceAll(f.Values[k], ",", ""), 64)
		if err != nil || x != x {
			f.Errors[k] = "Enter a number."
			return 0
		}
		return x
	}
	whole := func(k string) int {
		x := num(k)
		if _, bad := f.Errors[k]; !bad && x != float64(int(x)) {
			f.Errors[k] = "Enter a whole number."
		}
		return int(x)
	}
	r.WindowSeconds = whole("window_minutes") * 60
	r.BaselineSeconds = int(num("baseline_hours") * 3600)
	r.SpikeFactor = num("spike_factor")
	r.SpikeMinPoints = num("spike_min_points") / 100
	r.SpikeMinDeliveries = whole("spike_min_deliveries")
	r.RejectionsMin = whole("rejections_min")
	r.RejectionsFactor = num("rejections_factor")
	r.DeadLettersMin = whole("dead_letters_min")
	r.LossMin = whole("loss_min")
	if f.Values["silence_percent"] != "" { // a form from before the rule keeps the saved value
		r.SilenceFraction = num("silence_percent") / 100
	}
	r.SpikeEnabled, r.RejectionsEnabled, r.DeadLettersEnabled, r.LossEnabled = f.On["spike"], f.On["rejections"], f.On["dead_letters"], f.On["loss"]
	r.SilenceEnabled = f.On["silence"]
	return r, len(f.Errors) == 0
}

// addRulesErrors shows the service's validation messages on the form's
// fields, in the form's units.
func addRulesErrors(f *monviews.RulesForm, fields map[string]string) {
	for k, msg := range fields {
		switch k {
		case "window_seconds":
			f.Errors["window_minutes"] = "Between 1 and 1,440 minutes."
		case "baseline_seconds":
			if strings.Contains(msg, "twice") {
				f.Errors["baseline_hours"] = "At least twice the window."
			} else {
				f.Errors["baseline_hours"] = "Between 1 and 720 hours."
			}
		case "spike_min_points":
			f.Errors["spike_min_points"] = "Between 0 and 100 points."
		case "silence_fraction":
			f.Errors["silence_percent"] = "More than 0 and at most 100 %."
		default:
			f.Errors[k] = ruleSentence(msg)
		}
	}
}

func ruleSentence(s string) string {
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

func trimFloat(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
