package pull_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"leadpipe/internal/outbound"
	"leadpipe/internal/reconcile/fakeapi"
	"leadpipe/internal/reconcile/pull"
	"leadpipe/internal/webhooks/kinds"
)

// TestLinkedInPagesThroughLeads: the responses of the configured form are
// listed page by page with LinkedIn's versioned headers and Rest.li query
// syntax; the owner's other form is left out; each record maps to its
// person through the form's questions.
func TestLinkedInPagesThroughLeads(t *testing.T) {
	leads := fakeapi.MakeLeads(230, "li", t0, time.Minute)
	fake := fakeapi.NewLinkedIn(t, "7234246", leads)
	fake.AddOtherFormLeads(fakeapi.MakeLeads(40, "ot", t0, 90*time.Second)...)
	fake.RequireToken("li-token")
	p, _ := newPuller(t, pull.Settings{Kind: "linkedin", BaseURL: fake.URL, AccessToken: "li-token", FormID: "7234246", PageSize: 100})
	recs, pages := fetchAll(t, p, time.Time{})
	if len(recs) != 230 || pages != 3 {
		t.Fatalf("%d records in %d pages, want 230 in 3", len(recs), pages)
	}
	k, _ := kinds.New(kinds.LinkedIn, nil)
	byRef := map[string]kinds.Lead{}
	for _, raw := range recs {
		l, err := k.Map(raw)
		if err != nil {
			t.Fatal(err)
		}
		byRef[l.SourceRef] = l
	}
	for _, want := range leads {
		got, ok := byRef[want.ID]
		if !ok || got.Email != want.Email || got.Name != want.Name || got.Phone != want.Phone || got.Company != want.Company ||
			!got.CreatedAt.Equal(want.Created) {
			t.Fatalf("lead %s = %+v, want %+v", want.ID, got, want)
		}
		if got.Touch == nil || got.Touch.Last["campaign_id"] != fakeapi.LinkedInCampaign || got.Touch.Last["form_id"] != "7234246" {
			t.Fatalf("lead %s touch = %+v", want.ID, got.Touch)
		}
	}
	uris := fake.RequestURIs()
	if !strings.HasPrefix(uris[0], "/rest/leadForms/7234246") || !strings.Contains(uris[1],
		"owner=(sponsoredAccount:urn%3Ali%3AsponsoredAccount%3A522529623)&leadType=(leadType:SPONSORED)") {
		t.Errorf("requests: %v", uris[:2])
	}
}

func TestLinkedInSinceAndErrors(t *testing.T) {
	leads := fakeapi.MakeLeads(40, "ls", t0, time.Hour)
	fake := fakeapi.NewLinkedIn(t, "42", leads)
	c, _ := newClient()
	p, _ := pull.NewPuller(pull.Settings{Kind: "linkedin", BaseURL: fake.URL, AccessToken: "x", FormID: "42", PageSize: 7}, c)
	recs, _ := fetchAll(t, p, leads[25].Created)
	if len(recs) != 15 {
		t.Fatalf("got %d leads since lead 25, want 15 (inclusive)", len(recs))
	}

	raw, err := pull.FetchLinkedInLead(context.Background(), c, fake.URL, "x", leads[3].ID)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := kinds.New(kinds.LinkedIn, nil)
	if l, err := k.Map(raw); err != nil || l.SourceRef != leads[3].ID || l.Email != leads[3].Email || l.Name != leads[3].Name {
		t.Fatalf("fetched %s: %+v %v", raw, l, err)
	}
	_, err = pull.FetchLinkedInLead(context.Background(), c, fake.URL, "x", "nope")
	var se *outbound.StatusError
	if !errors.As(err, &se) || se.Status != 404 {
		t.Fatalf("unknown lead: %v", err)
	}
	if _, err := pull.FetchLinkedInLead(context.Background(), c, fake.URL, "x", "../leadForms/42"); err == nil {
		t.Fatal("a path in the response id was accepted")
	}
	fake.RequireToken("right")
	_, err = pull.FetchLinkedInLead(context.Background(), c, fake.URL, "wrong", leads[3].ID)
	if !errors.As(err, &se) || se.Status != 401 || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("wrong token: %v", err)
	}
	for _, bad := range []string{"", "abc", "FOO:42", "42,/x"} {
		if _, err := pull.NewPuller(pull.Settings{Kind: "linkedin", BaseURL: fake.URL, AccessToken: "x", FormID: bad}, c); err == nil {
			t.Errorf("form_id %q accepted", bad)
		}
	}
	if err := pull.ValidateLinkedInForms("42, EVENT:43"); err != nil {
		t.Errorf("two forms: %v", err)
	}
}
