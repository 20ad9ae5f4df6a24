package components

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
)

const xss = `<script>alert(1)</script>`

func render(t *testing.T, c templ.Component) (*goquery.Document, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		t.Fatalf("render: %v", err)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return doc, buf.String()
}

func TestUserDataIsEscaped(t *testing.T) {
	now := time.Date(2026, 3, 3, 14, 0, 0, 0, time.UTC)
	cases := map[string]templ.Component{
		"TextInput":   TextInput(xss, "q", xss, xss, templ.Attributes{"placeholder": xss}),
		"TextArea":    TextArea(xss, "note", xss, xss, nil),
		"Select":      Select(xss, "s", []Option{{Value: xss, Label: xss}}, xss),
		"StatusBadge": StatusBadge(xss),
		"Badge":       Badge(xss, xss),
		"EmptyState":  EmptyState(xss, xss, "/leads?q="+xss, xss),
		"Problem":     Problem(xss, xss),
		"CopyField":   CopyField(xss, xss),
		"Hidden":      Hidden(xss, xss),
		"Stat":        Stat(xss, xss, xss),
		"Card":        Card(xss),
		"Table":       Table(xss),
		"PageHeader":  PageHeader(xss, xss),
		"Pagination":  Pagination("/leads?cursor=" + xss),
		"Sparkline":   Sparkline([]float64{0.1, 0.2}, xss),
		"RateChart": RateChart(ChartData{Title: xss, Step: time.Hour, Points: []ChartPoint{
			{T: now, Volume: 10, Duplicates: 1},
		}, Highlight: []TimeRange{{From: now, To: now.Add(time.Hour), Label: xss}}}),
		"RateChartEmpty": RateChart(ChartData{Title: xss}),
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			doc, html := render(t, c)
			if n := doc.Find("script").Length(); n != 0 {
				t.Fatalf("found %d <script> elements in %s", n, html)
			}
			if strings.Contains(html, "<script") {
				t.Fatalf("raw <script in output: %s", html)
			}
		})
	}
	t.Run("text survives as text", func(t *testing.T) {
		doc, _ := render(t, Problem(xss, ""))
		if got := doc.Find(".problem-title").Text(); got != xss {
			t.Fatalf("title text = %q, want %q", got, xss)
		}
		doc, _ = render(t, TextInput("Search", "q", xss, "", nil))
		if got, _ := doc.Find("input").Attr("value"); got != xss {
			t.Fatalf("value = %q, want %q", got, xss)
		}
	})
}

func TestUnsafeURLsAreNeutralised(t *testing.T) {
	doc, _ := render(t, EmptyState("t", "h", "javascript:alert(1)", "Go"))
	href, _ := doc.Find(`[data-testid="empty-state-action"]`).Attr("href")
	if strings.HasPrefix(strings.ToLower(href), "javascript:") {
		t.Fatalf("javascript: URL rendered: %q", href)
	}
	doc, _ = render(t, Pagination("javascript:alert(1)"))
	href, _ = doc.Find(`[data-testid="pagination-next"]`).Attr("href")
	if strings.HasPrefix(strings.ToLower(href), "javascript:") {
		t.Fatalf("javascript: URL rendered: %q", href)
	}
}

func TestStatusBadge(t *testing.T) {
	want := map[string]string{
		"new": "New", "contacted": "Contacted", "qualified": "Qualified",
		"unqualified": "Unqualified", "won": "Won", "lost": "Lost",
	}
	for _, s := range Statuses() {
		t.Run(s, func(t *testing.T) {
			doc, _ := render(t, StatusBadge(s))
			b := doc.Find(`[data-testid="status-badge"]`)
			if b.Length() != 1 {
				t.Fatalf("want one badge, got %d", b.Length())
			}
			if got := strings.TrimSpace(b.Text()); got != want[s] {
				t.Errorf("text = %q, want %q", got, want[s])
			}
			if !b.HasClass("status-" + s) {
				t.Errorf("missing class status-%s: %v", s, b.AttrOr("class", ""))
			}
			if got := b.AttrOr("data-status", ""); got != s {
				t.Errorf("data-status = %q", got)
			}
			if StatusLabel(s) != want[s] {
				t.Errorf("StatusLabel(%q) = %q", s, StatusLabel(s))
			}
		})
	}
	if got := len(Statuses()); got != 6 {
		t.Fatalf("Statuses() has %d entries", got)
	}
	doc, _ := render(t, StatusBadge("on_hold"))
	b := doc.Find(`[data-testid="status-badge"]`)
	if b.Text() != "On hold" || !b.HasClass("badge-neutral") {
		t.Fatalf("unknown status rendered %q with class %q", b.Text(), b.AttrOr("class", ""))
	}
	// Statuses returns a copy.
	Statuses()[0] = "x"
	if Statuses()[0] != "new" {
		t.Fatal("Statuses exposes its backing array")
	}
}

func TestRelTimeAt(t *testing.T) {
	now := time.Date(2026, 3, 3, 14, 0, 0, 0, time.UTC)
	cases := []struct {
		ago  time.Duration
		want string
	}{
		{10 * time.Second, "just now"},
		{-10 * time.Second, "just now"},
		{70 * time.Second, "1 min ago"},
		{5 * time.Minute, "5 min ago"},
		{5*time.Minute + 59*time.Second, "5 min ago"},
		{44 * time.Minute, "44 min ago"},
		{50 * time.Minute, "1 hour ago"},
		{3 * time.Hour, "3 hours ago"},
		{30 * time.Hour, "yesterday"},
		{-30 * time.Hour, "tomorrow"},
		{-2 * time.Hour, "in 2 hours"},
		{-10 * time.Minute, "in 10 min"},
		{3 * 24 * time.Hour, "3 days ago"},
		{20 * 24 * time.Hour, "Feb 11"},
		{400 * 24 * time.Hour, "Jan 27, 2025"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			ts := now.Add(-c.ago)
			doc, _ := render(t, RelTimeAt(ts, now))
			el := doc.Find(`time[data-testid="reltime"]`)
			if got := el.Text(); got != c.want {
				t.Errorf("text = %q, want %q", got, c.want)
			}
			if got := el.AttrOr("datetime", ""); got != ts.Format(time.RFC3339) {
				t.Errorf("datetime = %q", got)
			}
			if got := el.AttrOr("title", ""); got != ts.Format("2006-01-02 15:04")+" UTC" {
				t.Errorf("title = %q", got)
			}
			if _, ok := el.Attr("data-rel"); !ok {
				t.Error("missing data-rel")
			}
		})
	}
	t.Run("other zones are shown in UTC", func(t *testing.T) {
		loc := time.FixedZone("X", 2*3600)
		ts := time.Date(2026, 3, 3, 15, 0, 0, 0, loc) // 13:00 UTC
		doc, _ := render(t, RelTimeAt(ts, now))
		el := doc.Find("time")
		if el.AttrOr("datetime", "") != "2026-03-03T13:00:00Z" || el.AttrOr("title", "") != "2026-03-03 13:00 UTC" {
			t.Fatalf("got datetime=%q title=%q", el.AttrOr("datetime", ""), el.AttrOr("title", ""))
		}
		if el.Text() != "1 hour ago" {
			t.Fatalf("text %q", el.Text())
		}
	})
	t.Run("the reader's zone from the context", func(t *testing.T) {
		ny, err := time.LoadLocation("America/New_York")
		if err != nil {
			t.Skip(err)
		}
		var buf bytes.Buffer
		ts := time.Date(2026, 1, 15, 14, 0, 0, 0, time.UTC) // 09:00 in New York (EST)
		if err := RelTimeAt(ts, now).Render(WithZone(context.Background(), ny), &buf); err != nil {
			t.Fatal(err)
		}
		doc, _ := goquery.NewDocumentFromReader(&buf)
		el := doc.Find("time")
		if el.AttrOr("datetime", "") != "2026-01-15T14:00:00Z" || el.AttrOr("title", "") != "2026-01-15 09:00 EST" || el.Text() != "Jan 15" {
			t.Fatalf("got datetime=%q title=%q text=%q", el.AttrOr("datetime", ""), el.AttrOr("title", ""), el.Text())
		}
	})
	t.Run("the exact time in the reader's zone", func(t *testing.T) {
		ny, err := time.LoadLocation("America/New_York")
		if err != nil {
			t.Skip(err)
		}
		ts := time.Date(2026, 1, 15, 14, 5, 0, 0, time.UTC)
		if got := ExactTime(WithZone(context.Background(), ny), ts); got != "Jan 15, 09:05 EST" {
			t.Fatalf("in New York: %q", got)
		}
		if got := ExactTime(context.Background(), ts); got != "Jan 15, 14:05 UTC" {
			t.Fatalf("without a zone: %q", got)
		}
	})
	t.Run("zero time", func(t *testing.T) {
		doc, _ := render(t, RelTimeAt(time.Time{}, now))
		if doc.Find("time").Length() != 0 || doc.Find(`[data-testid="reltime-none"]`).Length() != 1 {
			t.Fatal("zero time should render a dash, not a <time>")
		}
	})
	t.Run("RelTime uses the clock", func(t *testing.T) {
		doc, _ := render(t, RelTime(time.Now().Add(-3*time.Minute)))
		if got := doc.Find("time").Text(); got != "3 min ago" {
			t.Fatalf("got %q", got)
		}
	})
}

func TestTextInput(t *testing.T) {
	t.Run("error is linked", func(t *testing.T) {
		doc, _ := render(t, TextInput("Email", "email", "dana@", "Enter a full email address.", templ.Attributes{"type": "email", "required": true}))
		in := doc.Find("input")
		id := in.AttrOr("id", "")
		if id == "" || doc.Find(`label[for="`+id+`"]`).Length() != 1 {
			t.Fatalf("label not tied to input id %q", id)
		}
		if in.AttrOr("type", "") != "email" || in.AttrOr("name", "") != "email" || in.AttrOr("value", "") != "dana@" {
			t.Fatalf("attrs: %v", in.Nodes[0].Attr)
		}
		if in.AttrOr("aria-invalid", "") != "true" {
			t.Fatal("missing aria-invalid")
		}
		errEl := doc.Find(`[data-testid="field-error"]`)
		if errID := errEl.AttrOr("id", ""); errID == "" || in.AttrOr("aria-describedby", "") != errID {
			t.Fatalf("aria-describedby %q does not point at error %q", in.AttrOr("aria-describedby", ""), errID)
		}
		if errEl.Text() != "Enter a full email address." {
			t.Fatalf("error text %q", errEl.Text())
		}
		if _, ok := in.Attr("required"); !ok {
			t.Fatal("required attribute dropped")
		}
		types := 0
		for _, a := range in.Nodes[0].Attr {
			if a.Key == "type" {
				types++
			}
		}
		if types != 1 {
			t.Fatalf("type attribute appears %d times", types)
		}
	})
	t.Run("valid field", func(t *testing.T) {
		doc, _ := render(t, TextInput("Name", "name", "Dana", "", nil))
		in := doc.Find("input")
		if _, ok := in.Attr("aria-invalid"); ok {
			t.Fatal("aria-invalid on a valid field")
		}
		if _, ok := in.Attr("aria-describedby"); ok {
			t.Fatal("aria-describedby without an error")
		}
		if in.AttrOr("type", "") != "text" {
			t.Fatal("default type should be text")
		}
		if doc.Find(`[data-testid="field-error"]`).Length() != 0 {
			t.Fatal("error element without error")
		}
	})
	t.Run("custom id", func(t *testing.T) {
		doc, _ := render(t, TextInput("Name", "name", "", "bad", templ.Attributes{"id": "lead-name"}))
		if doc.Find("#lead-name").Length() != 1 || doc.Find(`label[for="lead-name"]`).Length() != 1 {
			t.Fatal("custom id not used")
		}
		if doc.Find("input").AttrOr("aria-describedby", "") != "lead-name-error" {
			t.Fatal("error id should follow the custom id")
		}
	})
	t.Run("textarea", func(t *testing.T) {
		doc, _ := render(t, TextArea("Note", "body", "hello", "Too long", nil))
		ta := doc.Find("textarea")
		if ta.Text() != "hello" || ta.AttrOr("aria-invalid", "") != "true" || doc.Find(`label[for="`+ta.AttrOr("id", "")+`"]`).Length() != 1 {
			t.Fatalf("textarea not wired: %v", ta.Nodes[0].Attr)
		}
	})
}

func TestSelect(t *testing.T) {
	doc, _ := render(t, Select("Status", "status", StatusOptions(), "won"))
	sel := doc.Find("select")
	if sel.AttrOr("name", "") != "status" || doc.Find(`label[for="`+sel.AttrOr("id", "")+`"]`).Length() != 1 {
		t.Fatal("select not labelled")
	}
	if n := doc.Find("option").Length(); n != 6 {
		t.Fatalf("%d options", n)
	}
	selected := doc.Find("option[selected]")
	if selected.Length() != 1 || selected.AttrOr("value", "") != "won" || selected.Text() != "Won" {
		t.Fatalf("selected option wrong: %d %q", selected.Length(), selected.Text())
	}
	doc, _ = render(t, SelectAttrs("Owner", "owner", []Option{{"", "Anyone"}, {"u1", "Dana"}}, "", templ.Attributes{"hx-get": "/leads"}))
	if doc.Find("select").AttrOr("hx-get", "") != "/leads" || doc.Find("option[selected]").AttrOr("value", "x") != "" {
		t.Fatal("SelectAttrs did not pass attributes or select the empty option")
	}
}

func TestButtonsAndHidden(t *testing.T) {
	doc, _ := render(t, SubmitButton("Save"))
	b := doc.Find("button")
	if b.AttrOr("type", "") != "submit" || b.Text() != "Save" {
		t.Fatal("submit button wrong")
	}
	doc, _ = render(t, Hidden("version", "7"))
	in := doc.Find("input")
	if in.AttrOr("type", "") != "hidden" || in.AttrOr("name", "") != "version" || in.AttrOr("value", "") != "7" {
		t.Fatal("hidden input wrong")
	}
}

func TestCopyField(t *testing.T) {
	const url = "https://leads.example.com/webhooks/acme/src_1"
	doc, _ := render(t, CopyField("Webhook URL", url))
	in := doc.Find("input")
	if _, ok := in.Attr("readonly"); !ok || in.AttrOr("value", "") != url {
		t.Fatal("value should be in a read-only input")
	}
	if doc.Find(`label[for="`+in.AttrOr("id", "")+`"]`).Text() != "Webhook URL" {
		t.Fatal("input not labelled")
	}
	btn := doc.Find("button[data-copy]")
	if btn.AttrOr("data-copy", "") != in.AttrOr("id", "-") {
		t.Fatal("copy button does not target the input")
	}
	if _, ok := btn.Attr("hidden"); !ok {
		t.Fatal("copy button must stay hidden until app.js can make it work")
	}
	if btn.AttrOr("type", "") != "button" {
		t.Fatal("copy button would submit its form")
	}
	d1, _ := render(t, CopyField("A", "1"))
	d2, _ := render(t, CopyField("A", "2"))
	if d1.Find("input").AttrOr("id", "") == d2.Find("input").AttrOr("id", "") {
		t.Fatal("two copy fields on one page share an id")
	}
}

func TestPagination(t *testing.T) {
	_, html := render(t, Pagination(""))
	if strings.TrimSpace(html) != "" {
		t.Fatalf("empty next renders %q", html)
	}
	doc, _ := render(t, Pagination("/leads?cursor=abc&status=new"))
	a := doc.Find(`[data-testid="pagination-next"]`)
	if a.AttrOr("href", "") != "/leads?cursor=abc&status=new" || !strings.Contains(a.Text(), "Older") || a.AttrOr("rel", "") != "next" {
		t.Fatalf("link wrong: %q %q", a.AttrOr("href", ""), a.Text())
	}
}

func TestEmptyState(t *testing.T) {
	doc, _ := render(t, EmptyState("No leads yet", "Connect a source to start receiving leads.", "/sources/new", "Add a source"))
	es := doc.Find(`[data-testid="empty-state"]`)
	if es.Find("h2").Text() != "No leads yet" || !strings.Contains(es.Text(), "Connect a source") {
		t.Fatal("title or hint missing")
	}
	a := es.Find(`[data-testid="empty-state-action"]`)
	if a.AttrOr("href", "") != "/sources/new" || a.Text() != "Add a source" {
		t.Fatal("action missing")
	}
	doc, _ = render(t, EmptyState("Nothing", "", "", ""))
	if doc.Find("a").Length() != 0 || doc.Find("p").Length() != 0 {
		t.Fatal("empty action or hint rendered")
	}
}

func TestProblemAndWrappers(t *testing.T) {
	doc, _ := render(t, Problem("Conflict", "Someone else changed this lead."))
	p := doc.Find(`[data-testid="problem"]`)
	if p.AttrOr("role", "") != "alert" || !strings.Contains(p.Text(), "Someone else") {
		t.Fatal("problem box wrong")
	}
	rows := templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, err := io.WriteString(w, "<tbody><tr><td>x</td></tr></tbody>")
		return err
	})
	ctx := templ.WithChildren(context.Background(), rows)
	var buf bytes.Buffer
	if err := Table("Leads").Render(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	doc, _ = goquery.NewDocumentFromReader(&buf)
	if doc.Find(`.table-wrap[role="region"][tabindex="0"] table caption`).Text() != "Leads" || doc.Find("td").Text() != "x" {
		t.Fatal("table wrapper wrong")
	}
}

func TestFormatting(t *testing.T) {
	for in, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := formatInt(in); got != want {
			t.Errorf("formatInt(%d) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[int64]string{5: "5", 999: "999", 1200: "1.2k", 25000: "25k", 3_400_000: "3.4M"} {
		if got := formatCompact(in); got != want {
			t.Errorf("formatCompact(%d) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[float64]string{0.05: "5%", 0.025: "2.5%", 0.0025: "0.25%", 1: "100%", 0: "0%"} {
		if got := formatPercent(in); got != want {
			t.Errorf("formatPercent(%v) = %q, want %q", in, got, want)
		}
	}
	if FieldID("lead[name]") != "f-lead-name-" {
		t.Errorf("FieldID = %q", FieldID("lead[name]"))
	}
}
