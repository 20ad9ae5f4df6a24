package leads

import (
	"strings"
	"testing"
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
