package monitor

// CheckSilenceForTest exposes the silence rule's decision to the external
// tests.
func CheckSilenceForTest(r Rules, last int64, usual float64) bool {
	fire, _ := r.checkSilence(last, usual)
	return fire
}
