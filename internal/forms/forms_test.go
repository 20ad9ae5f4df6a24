package forms

import (
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestToken(t *testing.T) {
	now := time.Now()
	tok := NewToken("s1", "form1", now.Add(-3*time.Second))
	if len(tok) > 191 {
		t.Fatalf("token of %d bytes is longer than a delivery id", len(tok))
	}
	at, err := CheckToken(tok, []string{"s0", "s1"}, "form1", now)
	if err != nil || now.Sub(at) < 3*time.Second-time.Millisecond {
		t.Fatalf("valid token: %v %v", at, err)
	}
	for name, c := range map[string]struct {
		tok, form string
		secrets   []string
		want      error
	}{
		"other form":      {tok, "form2", []string{"s1"}, ErrTokenForm},
		"rotated away":    {tok, "form1", []string{"s2"}, ErrTokenForged},
		"tampered":        {strings.Replace(tok, "form1", "form2", 1), "form2", []string{"s1"}, ErrTokenForged},
		"expired":         {NewToken("s1", "form1", now.Add(-25*time.Hour)), "form1", []string{"s1"}, ErrTokenExpired},
		"from the future": {NewToken("s1", "form1", now.Add(time.Hour)), "form1", []string{"s1"}, ErrTokenForged},
		"garbage":         {"v1.x", "form1", []string{"s1"}, ErrTokenForged},
		"too long":        {strings.Repeat("a", 300), "form1", []string{"s1"}, ErrTokenForged},
	} {
		if _, err := CheckToken(c.tok, c.secrets, c.form, now); err != c.want {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if NewToken("s1", "form1", now) == NewToken("s1", "form1", now) {
		t.Error("two renders at the same instant share a token")
	}
}

func TestLimiterCountsSubmissionsNotRetries(t *testing.T) {
	var l limiter
	now := time.Unix(1_700_000_000, 0)
	for i := 0; i < 10; i++ {
		if ok, _ := l.allow("f", "1.2.3.4", string(rune('a'+i)), 10, 600, now); !ok {
			t.Fatalf("submission %d refused", i)
		}
	}
	if ok, retry := l.allow("f", "1.2.3.4", "k", 10, 600, now); ok || retry <= 0 || retry > time.Minute {
		t.Fatalf("11th: %v %v", ok, retry)
	}
	if ok, _ := l.allow("f", "1.2.3.4", "a", 10, 600, now); !ok {
		t.Fatal("a retry of a counted submission was refused")
	}
	if ok, _ := l.allow("f", "5.6.7.8", "z", 10, 600, now); !ok {
		t.Fatal("another address was refused")
	}
	if ok, _ := l.allow("f", "1.2.3.4", "k", 10, 600, now.Add(time.Minute)); !ok {
		t.Fatal("the next minute was refused")
	}
	// Per form, across addresses, concurrently.
	var l2 limiter
	var wg sync.WaitGroup
	var mu sync.Mutex
	passed := 0
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if ok, _ := l2.allow("f", string(rune('A'+i)), string(rune(1000+i)), 10, 30, now); ok {
				mu.Lock()
				passed++
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	if passed != 30 {
		t.Fatalf("%d passed the per-form limit of 30", passed)
	}
}

func TestCheckFields(t *testing.T) {
	f := Form{Fields: []Field{
		{Name: "email", Label: "E-mail", Type: TypeEmail, Required: true},
		{Name: "topic", Label: "Topic", Type: TypeSelect, Options: []string{"A", "B"}},
		{Name: "note", Label: "Note", Type: TypeTextarea},
		{Name: "news", Label: "News", Type: TypeCheckbox},
	}, Consent: &ConsentDef{Text: "ok?", Required: true}}
	vals, p := checkFields(f, url.Values{"email": {"a@b.co"}, "topic": {"B"}, "note": {"hi"}, "news": {"on"}, "consent": {"yes"}, "extra": {"dropped"}})
	if len(p) != 0 || vals["news"] != "yes" || vals["extra"] != "" || vals["email"] != "a@b.co" {
		t.Fatalf("good values: %v %v", vals, p)
	}
	for name, c := range map[string]struct {
		v     url.Values
		field string
	}{
		"missing required": {url.Values{"consent": {"yes"}}, "email"},
		"not an e-mail":    {url.Values{"email": {"nope"}, "consent": {"yes"}}, "email"},
		"display name":     {url.Values{"email": {"Bob <b@b.co>"}, "consent": {"yes"}}, "email"},
		"unknown option":   {url.Values{"email": {"a@b.co"}, "topic": {"C"}, "consent": {"yes"}}, "topic"},
		"huge textarea":    {url.Values{"email": {"a@b.co"}, "note": {strings.Repeat("x", MaxTextareaLen+1)}, "consent": {"yes"}}, "note"},
		"no consent":       {url.Values{"email": {"a@b.co"}}, "consent"},
	} {
		if _, p := checkFields(f, c.v); p[c.field] == "" {
			t.Errorf("%s: no problem on %s (%v)", name, c.field, p)
		}
	}
}

func TestValidate(t *testing.T) {
	base := func() *Form {
		return &Form{Slug: "contact", Name: "Contact", Fields: []Field{{Name: "email", Label: "E-mail", Type: TypeEmail}},
			AllowedOrigins: []string{"https://www.example.com"}}
	}
	if p := validate(base()); len(p) != 0 {
		t.Fatalf("valid form: %v", p)
	}
	f := base()
	validate(f)
	if f.Limits.PerIP != DefaultPerIP || f.Limits.PerForm != DefaultPerForm {
		t.Fatalf("default limits: %+v", f.Limits)
	}
	for name, mutate := range map[string]func(*Form){
		"redirect off origin": func(f *Form) { f.Success.RedirectURL = "https://evil.example/x" },
		"origin with a path":  func(f *Form) { f.AllowedOrigins = []string{"https://www.example.com/"} },
		"duplicate field":     func(f *Form) { f.Fields = append(f.Fields, f.Fields[0]) },
		"honeypot name":       func(f *Form) { f.Fields[0].Name = ParamHoneypot },
		"long slug":           func(f *Form) { f.Slug = strings.Repeat("a", 59) },
		"captcha provider":    func(f *Form) { f.Captcha = &Captcha{Provider: "recaptcha", SiteKey: "k"} },
	} {
		f := base()
		mutate(f)
		if p := validate(f); len(p) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
	f = base()
	f.Success.RedirectURL = "https://www.example.com/thanks"
	if p := validate(f); len(p) != 0 {
		t.Fatalf("redirect on an allowed origin: %v", p)
	}
}

func TestTouches(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	sub := Submission{Values: url.Values{"utm_source": {"ads"}, "gclid": {"g1"}, "_ft": {`{"utm_source":"news","evil":"x","at":"2026-11-01T00:00:00Z"}`}}}
	tc := touches(sub, now)
	if tc.First["utm_source"] != "news" || tc.First["evil"] != "" || tc.Last["utm_source"] != "ads" || tc.Last["gclid"] != "g1" ||
		tc.Last["at"] != "2026-12-05T12:00:00Z" {
		t.Fatalf("touches: %+v", tc)
	}
	if touches(Submission{Values: url.Values{}}, now) != nil {
		t.Fatal("a visit with nothing known has a touch")
	}
}
