package leads

import (
	"strings"
	"testing"
	"time"
)

func TestPayloadTokens(t *testing.T) {
	toks, cut := PayloadTokens([]byte(`{"name":"<script>x</script>","n":-1.5e3,"ok":true,"nil":null,"a":["q\"uote"]}`))
	if cut {
		t.Fatal("cut a small payload")
	}
	var all strings.Builder
	classes := map[string][]string{}
	for _, tk := range toks {
		all.WriteString(tk.Text)
		classes[tk.Class] = append(classes[tk.Class], tk.Text)
	}
	want := "{\n  \"name\": \"<script>x</script>\",\n  \"n\": -1.5e3,\n  \"ok\": true,\n  \"nil\": null,\n  \"a\": [\n    \"q\\\"uote\"\n  ]\n}"
	if all.String() != want {
		t.Fatalf("text:\n%s\nwant\n%s", all.String(), want)
	}
	if strings.Join(classes["json-key"], ",") != `"name","n","ok","nil","a"` ||
		strings.Join(classes["json-str"], ",") != `"<script>x</script>","q\"uote"` ||
		strings.Join(classes["json-num"], ",") != `-1.5e3` || strings.Join(classes["json-lit"], ",") != "true,null" {
		t.Fatalf("classes %v", classes)
	}
	// Not JSON: one plain token, invalid UTF-8 replaced.
	toks, _ = PayloadTokens([]byte("not json \xff"))
	if len(toks) != 1 || toks[0].Class != "" || toks[0].Text != "not json \uFFFD" {
		t.Fatalf("plain %+v", toks)
	}
	big := `{"k":"` + strings.Repeat("é", 200_000) + `"}`
	if _, cut := PayloadTokens([]byte(big)); !cut {
		t.Fatal("a 400 KB payload was not cut")
	}
}

func TestFiltersHref(t *testing.T) {
	f := Filters{Status: "new", Source: "01ABC", Q: "a&b"}
	if got := f.Href("won"); got != "/leads?q=a%26b&source=01ABC&status=won" {
		t.Fatalf("Href %q", got)
	}
	if got := (Filters{}).Href(""); got != "/leads" {
		t.Fatalf("empty Href %q", got)
	}
	if !f.Active() || (Filters{}).Active() {
		t.Fatal("Active")
	}
}

func TestCountText(t *testing.T) {
	for _, c := range []struct {
		n    int
		cap  bool
		want string
	}{{0, false, "0"}, {999, false, "999"}, {1000, true, "1,000+"}, {1234567, false, "1,234,567"}} {
		if got := (StatusCount{N: c.n, Capped: c.cap}).CountText(); got != c.want {
			t.Errorf("%d %v: %q", c.n, c.cap, got)
		}
	}
	if humanKind("lead_enriched") != "Lead enriched" || (Lead{Phone: "+1"}).Title() != "+1" || (Lead{}).Title() != "Unnamed lead" {
		t.Fatal("words")
	}
}

func TestCollapseDuplicates(t *testing.T) {
	at := func(m int) time.Time { return time.Date(2026, 12, 1, 10, m, 0, 0, time.UTC) }
	dup := func(actor string, n, first, last int) Event {
		return Event{Kind: "duplicate", Actor: actor, Count: n, FirstAt: at(first), LastAt: at(last), At: at(last)}
	}
	evs := []Event{
		dup("Web", 4, 20, 30), dup("Web", 2, 10, 25), dup("Web", 3, 5, 28), // one storm of one sender
		{Kind: "note_added", Actor: "Sam"},
		dup("Web", 1, 3, 3), dup("Web", 1, 2, 2), // another run, after the note
		dup("Typeform", 5, 1, 2), // another sender: its own row
	}
	got := CollapseDuplicates(evs)
	if len(got) != 4 {
		t.Fatalf("%d entries, want 4: %+v", len(got), got)
	}
	g := got[0]
	if g.Count != 9 || !g.FirstAt.Equal(at(5)) || !g.LastAt.Equal(at(30)) || len(g.Items) != 3 {
		t.Errorf("collapsed storm %+v", g)
	}
	if got[2].Count != 2 || len(got[2].Items) != 2 { // the two adjacent Web duplicates after the note
		t.Errorf("second run %+v", got[2])
	}
	if got[3].Actor != "Typeform" || got[3].Items != nil {
		t.Errorf("another sender's duplicate joined the run: %+v", got[3])
	}
	if !got[1].Human() || got[0].Human() || (Event{Kind: "created"}).Human() || !(Event{Kind: "created", Actor: "Sam"}).Human() {
		t.Error("Human")
	}
}

func TestPendingMetaLead(t *testing.T) {
	l := Lead{SourceRef: "1234567890", SourceID: "s1", SourceName: "Facebook Lead Ads", Pending: PendingMeta, FormID: "560"}
	if l.Title() != "Lead from Facebook Lead Ads" || l.PendingText() != "Details pending from Meta" || l.FormText() != "form 560" {
		t.Errorf("%q %q %q", l.Title(), l.PendingText(), l.FormText())
	}
	l.Pending = PendingToken
	if !strings.Contains(l.PendingText(), "access token") {
		t.Error(l.PendingText())
	}
	if (Lead{SourceRef: "x"}).Title() != "Unnamed lead" {
		t.Error("a lead not waiting for details")
	}
}

// A view is only the defaults of the filter sheet: the URL's values win,
// the rest come from the view, else "any".
func TestFiltersEffective(t *testing.T) {
	f := Filters{View: ViewMine, Status: "won"}
	e := f.Effective()
	if e.Status != "won" || e.Owner != OwnerMe || e.Source != FilterAny || e.Due != FilterAny || f.NarrowCount() != 1 {
		t.Fatalf("mine + status=won: %+v (%d narrowing)", e, f.NarrowCount())
	}
	// The badge counts what the user chose, not the view's own values,
	// even when the form sent them along.
	if n := (Filters{View: ViewMine, Status: StatusOpen, Owner: OwnerMe, Source: FilterAny, Due: FilterAny}).NarrowCount(); n != 0 {
		t.Fatalf("My open leads as the form sends it: %d chosen", n)
	}
	if n := (Filters{View: ViewMine, Status: StatusOpen, Owner: FilterAny, Source: "s1", Due: FilterAny}).NarrowCount(); n != 2 {
		t.Fatalf("anyone's leads of one source: %d chosen", n)
	}
	if e := (Filters{View: ViewDue}).Effective(); e.Status != StatusOpen || e.Owner != OwnerMe || e.Due != DueToday {
		t.Fatalf("due view: %+v", e)
	}
	if e := (Filters{View: ViewMine, Owner: FilterAny}).Effective(); e.Owner != FilterAny {
		t.Fatalf("anyone in My open leads: %+v", e)
	}
	if got := (Filters{View: ViewAll, Due: DueOverdue}).Href(""); got != "/leads?due=overdue&view=all" {
		t.Fatalf("Href %q", got)
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip(err)
	}
	now := time.Date(2027, 1, 15, 12, 0, 0, 0, time.UTC) // 07:00 in New York
	if got := DueText(time.Date(2027, 1, 15, 14, 0, 0, 0, time.UTC).In(ny), now); got != "today 09:00" {
		t.Fatalf("DueText in New York: %q", got)
	}
}

// Sales words: a source's signing note is dropped, a sender's retries are
// never a re-submission, a person's second submission an hour later is.
func TestSalesWords(t *testing.T) {
	for in, want := range map[string]string{
		"Checkout (Stripe-style signature)": "Checkout",
		"Landing page (Standard Webhooks)":  "Landing page",
		"Partner CRM (generic HMAC)":        "Partner CRM",
		"Facebook Lead Ads":                 "Facebook Lead Ads",
		"Website (EU)":                      "Website (EU)",
	} {
		if got := SourceName(in); got != want {
			t.Errorf("SourceName(%q) = %q, want %q", in, got, want)
		}
	}
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	retried := Lead{SourceID: "s", TimesSeen: 2, Repeats: 1, CreatedAt: t0, LastSeenAt: t0.Add(2 * time.Hour)}
	again := Lead{SourceID: "s", TimesSeen: 2, CreatedAt: t0, LastSeenAt: t0.Add(time.Hour)}
	quick := Lead{SourceID: "s", TimesSeen: 3, CreatedAt: t0, LastSeenAt: t0.Add(time.Minute)}
	thrice := Lead{SourceID: "s", TimesSeen: 4, Repeats: 1, CreatedAt: t0, LastSeenAt: t0.Add(3 * time.Hour)}
	if retried.Resubmitted() != "" || quick.Resubmitted() != "" || again.Resubmitted() != "Submitted twice" || thrice.Resubmitted() != "Submitted 3 times" {
		t.Errorf("%q %q %q %q", retried.Resubmitted(), quick.Resubmitted(), again.Resubmitted(), thrice.Resubmitted())
	}
	if n := (Filters{View: ViewDuplicates}).NarrowCount(); n != 0 {
		t.Errorf("the duplicates view counts %d filters", n)
	}
	g := DuplicateGroup{Leads: []Lead{{ID: "3", Status: "new"}, {ID: "2", Status: "contacted"}, {ID: "1", Status: "qualified"}}}
	if g.Survivor = PickSurvivor(g.Leads); g.Survivor != "2" || g.MergeHref() != "/leads/2/merge?with=3&with=1" {
		t.Errorf("survivor %s, %s", g.Survivor, g.MergeHref())
	}
}
