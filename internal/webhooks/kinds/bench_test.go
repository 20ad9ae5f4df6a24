package kinds

import (
	"strconv"
	"testing"
)

// BenchmarkIngest measures what the webhook handler does per request
// (Verify with a current and an in-grace secret, then Parse) and what the
// worker does per record (Map), for each kind's sample body.
func BenchmarkIngest(b *testing.B) {
	for _, name := range Names() {
		b.Run(name, func(b *testing.B) {
			k := mustKind(b, name, SampleConfig(name))
			secret := mustSecret(b, name)
			secrets := []string{mustSecret(b, name), secret}
			h, body := signedSample(b, name, secret, "dlv-1", "ref-1", sampleLead)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := k.Verify(h, body, secrets, testNow); err != nil {
					b.Fatal(err)
				}
				recs, err := k.Parse(h, body)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := k.Map(recs[0].Raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSign is the cost of producing a distinct signed delivery, which
// bounds how fast a simulator can send.
func BenchmarkSign(b *testing.B) {
	for _, name := range Names() {
		b.Run(name, func(b *testing.B) {
			secret := mustSecret(b, name)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				id := "dlv-" + strconv.Itoa(i)
				body := SampleBody(name, id, "ref-"+strconv.Itoa(i), sampleLead, testNow)
				if _, _, err := Sign(name, SampleConfig(name), secret, id, body, testNow); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
