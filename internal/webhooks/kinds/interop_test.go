package kinds

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stripe/stripe-go/v82/webhook"
)

// The reference verifiers read the wall clock, so these tests sign at time.Now().

func TestStandardWebhooksLibrary(t *testing.T) {
	k := mustKind(t, Standard, nil)
	now := time.Now()
	body := SampleBody(Standard, "", "contact_1", sampleLead, now)
	// The library's own example secret has no whsec_ prefix.
	for _, secret := range []string{mustSecret(t, Standard), "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"} {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}

		// Theirs signs, ours verifies.
		sig, err := wh.Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", now, body)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		h.Set(standardwebhooks.HeaderWebhookID, "msg_p5jXN8AQM9LWM0D4loKWxJek")
		h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
		h.Set(standardwebhooks.HeaderWebhookSignature, sig)
		if err := k.Verify(h, body, []string{mustSecret(t, Standard), secret}, now); err != nil {
			t.Errorf("our Verify of their signature: %v", err)
		}
		if err := k.Verify(h, append(body, ' '), []string{secret}, now); err == nil {
			t.Error("our Verify accepted a changed body")
		}

		// Ours signs, theirs verifies.
		h, signed, err := Sign(Standard, nil, secret, "msg_2", body, now)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(signed, h); err != nil {
			t.Errorf("their Verify of our signature: %v", err)
		}
		h.Set(standardwebhooks.HeaderWebhookID, "msg_3")
		if err := wh.Verify(signed, h); err == nil {
			t.Error("their Verify accepted a changed id")
		}
	}
}

func TestStripeLibrary(t *testing.T) {
	k := mustKind(t, Timestamped, nil)
	now := time.Now()
	secret := mustSecret(t, Timestamped)
	body := SampleBody(Timestamped, "evt_1PqRsT", "cus_1", sampleLead, now)

	// Theirs signs, ours verifies, under each accepted header name.
	p := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: now})
	for _, name := range timestampedSignatureHeaders {
		h := http.Header{}
		h.Set(name, p.Header)
		if err := k.Verify(h, body, []string{"whsec_old", secret}, now); err != nil {
			t.Errorf("%s: our Verify of their signature: %v", name, err)
		}
	}
	// ComputeSignature keys with the whole string, whsec_ prefix included.
	h := http.Header{}
	h.Set("Stripe-Signature", "t="+strconv.FormatInt(now.Unix(), 10)+",v1="+hex.EncodeToString(webhook.ComputeSignature(now, body, secret)))
	if err := k.Verify(h, body, []string{secret}, now); err != nil {
		t.Errorf("ComputeSignature: %v", err)
	}
	old := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: now.Add(-10 * time.Minute)})
	h.Set("Stripe-Signature", old.Header)
	if err := k.Verify(h, body, []string{secret}, now); err == nil {
		t.Error("our Verify accepted a 10-minute-old signature")
	}

	// Ours signs, theirs verifies and decodes the sample event.
	h, signed, err := Sign(Timestamped, nil, secret, "", body, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := webhook.ValidatePayload(signed, h.Get("Webhook-Signature"), secret); err != nil {
		t.Errorf("their ValidatePayload of our signature: %v", err)
	}
	ev, err := webhook.ConstructEventWithOptions(signed, h.Get("Webhook-Signature"), secret, webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true})
	if err != nil {
		t.Fatalf("their ConstructEvent: %v", err)
	}
	if ev.ID != "evt_1PqRsT" || ev.Type != "customer.created" || ev.Data == nil || ev.Data.Object["id"] != "cus_1" {
		t.Errorf("their event = %+v", ev)
	}
	if err := webhook.ValidatePayload(signed, h.Get("Webhook-Signature"), "whsec_other"); err == nil {
		t.Error("their ValidatePayload accepted another secret")
	}
}
