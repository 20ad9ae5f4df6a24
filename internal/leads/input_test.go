package leads

import (
	"errors"
	"strings"
	"testing"

	"leadpipe/internal/apperr"
)

func fieldsOf(err error) map[string]string {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Fields
	}
	return nil
}

func TestParseCreate(t *testing.T) {
	in, err := ParseCreate([]byte(`{"name":"  Ada  ","email":"ada@example.test","tags":["vip"," vip ","b2b"],"company":null}`))
	if err != nil || in.Name != "Ada" || in.Company != "" || strings.Join(in.Tags, ",") != "vip,b2b" {
		t.Fatalf("%+v %v", in, err)
	}
	cases := map[string][]string{
		`{}`:                                  {"name"},
		`{"name":1}`:                          {"name"},
		`{"email":"nope"}`:                    {"email"},
		`{"name":"x","status":"won","foo":1}`: {"status", "foo"},
		`{"name":"x","tags":"a"}`:             {"tags"},
		`{"name":"x","tags":[""]}`:            {"tags"},
		`{"name":"` + strings.Repeat("é", 256) + `"}`: {"name"},
	}
	for body, want := range cases {
		_, err := ParseCreate([]byte(body))
		f := fieldsOf(err)
		for _, k := range want {
			if _, ok := f[k]; !ok {
				t.Errorf("%s: want 422 naming %s, got %v", body, k, err)
			}
		}
	}
	for _, bad := range []string{``, `[]`, `{"name":`, `null`} {
		if _, err := ParseCreate([]byte(bad)); !apperr.Is(err, apperr.BadRequest) {
			t.Errorf("%q: want 400, got %v", bad, err)
		}
	}
}

func TestParsePatch(t *testing.T) {
	p, err := ParsePatch([]byte(`{"status":"won","owner_id":null,"tags":["a"]}`))
	if err != nil || *p.Status != "won" || !p.OwnerSet || p.OwnerID != nil || len(*p.Tags) != 1 {
		t.Fatalf("%+v %v", p, err)
	}
	p, err = ParsePatch([]byte(`{"tags":null}`))
	if err != nil || p.Tags == nil || len(*p.Tags) != 0 {
		t.Fatalf("null tags clear them: %+v %v", p, err)
	}
	if p, err := ParsePatch([]byte(`{}`)); err != nil || !p.Empty() {
		t.Fatalf("empty patch: %+v %v", p, err)
	}
	_, err = ParsePatch([]byte(`{"name":"x","times_seen":3,"id":"y","notes":"z","status":null,"owner_id":5,"zzz":1}`))
	f := fieldsOf(err)
	for _, k := range []string{"name", "times_seen", "id", "notes", "status", "owner_id", "zzz"} {
		if f[k] == "" {
			t.Errorf("422 does not name %s: %v", k, f)
		}
	}
	if !strings.Contains(f["name"], "sender-owned") {
		t.Errorf("name: %q", f["name"])
	}
}

func TestCursor(t *testing.T) {
	id := "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	if got, ok := decodeCursor(encodeCursor(id)); !ok || got != id {
		t.Fatal(got, ok)
	}
	for _, bad := range []string{"", "!!", encodeCursor("short"), encodeCursor("01arz3ndektsv4rrffq69g5fav")} {
		if _, ok := decodeCursor(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
	if likePrefix(`50%_off\`) != `50\%\_off\\%` {
		t.Fatal(likePrefix(`50%_off\`))
	}
}
