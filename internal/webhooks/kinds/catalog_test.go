package kinds

import (
	"encoding/json"
	"testing"
)

// TestCatalog: every kind is in the catalog; every entry's config is valid
// for its kind, its sample is signed and verified as the vendor does, and
// maps to the sample person where the vendor sends the person's fields.
func TestCatalog(t *testing.T) {
	seen := map[string]bool{}
	presets := map[string]bool{}
	for _, e := range Catalog() {
		seen[e.Kind] = true
		if e.Preset != "" {
			presets[e.Preset] = true
		}
		if e.Name == "" || e.Vendor == "" || len(e.Setup) == 0 || !json.Valid(e.Sample) {
			t.Errorf("%s/%s: incomplete entry", e.Kind, e.Preset)
		}
		cfg := e.Config
		if p := ValidateConfig(e.Kind, cfg); len(p) > 0 {
			t.Fatalf("%s/%s: config %s: %v", e.Kind, e.Preset, cfg, p)
		}
		k, err := New(e.Kind, cfg)
		if err != nil {
			t.Fatal(err)
		}
		secret := mustSecret(t, e.Kind)
		h, body, err := Sign(e.Kind, cfg, secret, "evt_01JCATALOG0001", e.Sample, testNow)
		if err != nil {
			t.Fatalf("%s: %v", e.Kind, err)
		}
		if err := VerifyRequest(k, sampleRequest(h), body, []string{secret}, testNow); err != nil {
			t.Fatalf("%s/%s: %v", e.Kind, e.Preset, err)
		}
		recs, err := k.Parse(h, body)
		if err != nil {
			t.Fatalf("%s/%s: parse: %v", e.Kind, e.Preset, err)
		}
		l, err := k.Map(recs[0].Raw)
		if err != nil {
			t.Fatalf("%s/%s: map: %v", e.Kind, e.Preset, err)
		}
		switch e.Kind {
		case Meta, LinkedIn: // the person comes from the vendor's API
		case HubSpot:
			if l.Email != SampleLead.Email {
				t.Errorf("hubspot: %+v", l)
			}
		default:
			if l.Email != SampleLead.Email || l.Name != SampleLead.Name || l.Phone != SampleLead.Phone || l.Company != SampleLead.Company {
				t.Errorf("%s/%s: lead %+v", e.Kind, e.Preset, l)
			}
		}
	}
	for _, k := range Names() {
		if !seen[k] {
			t.Errorf("kind %s is not in the catalog", k)
		}
	}
	for _, p := range []string{"zapier", "unbounce", "gravity-forms", "contact-form-7", "jotform", "make", "n8n", "pipedream"} {
		if !presets[p] {
			t.Errorf("preset %s is missing", p)
		}
	}
}
