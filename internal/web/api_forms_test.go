package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/forms"
)

// formEnv is an app with a worker, a tenant and a form.
type formEnv struct {
	e    *apptest.Env
	ten  apptest.Tenant
	form map[string]any
	id   string
	src  string
}

func newFormEnv(t *testing.T, prefix string, extra map[string]any) *formEnv {
	t.Helper()
	return newFormEnvOn(t, apptest.New(t, prefix, apptest.Options{RedisDB: apptest.RedisWeb, Worker: true}), extra)
}

func newFormEnvOn(t *testing.T, e *apptest.Env, extra map[string]any) *formEnv {
	t.Helper()
	ten := e.Tenant("acme")
	body := map[string]any{
		"slug": "contact", "name": "Contact us",
		"fields": []map[string]any{
			{"name": "name", "label": "Your name", "type": "text", "required": true},
			{"name": "email", "label": "E-mail", "type": "email", "required": true},
			{"name": "company", "label": "Company", "type": "text"},
			{"name": "topic", "label": "Topic", "type": "select", "options": []string{"Sales", "Support"}},
			{"name": "message", "label": "Message", "type": "textarea"},
		},
		"consent":         map[string]any{"text": "I agree that Acme may contact me about my request.", "required": true},
		"allowed_origins": []string{"http://127.0.0.1:1"},
	}
	for k, v := range extra {
		body[k] = v
	}
	res := e.Do("POST", "/api/v1/forms", ten.Token, body)
	if res.Status != http.StatusCreated {
		t.Fatalf("create form: %d %s", res.Status, res.Body)
	}
	var f map[string]any
	res.JSON(t, &f)
	return &formEnv{e: e, ten: ten, form: f, id: f["id"].(string), src: f["source_id"].(string)}
}

// token mints a submission token rendered age ago, as the page would have.
func (fe *formEnv) token(t *testing.T, age time.Duration) string {
	t.Helper()
	secrets, err := fe.e.App.Sources.Secrets(context.Background(), fe.ten.ID, fe.src)
	if err != nil || len(secrets) == 0 {
		t.Fatalf("secrets: %v", err)
	}
	return forms.NewToken(secrets[0], fe.id, time.Now().Add(-age))
}

func (fe *formEnv) values(tok, email string) url.Values {
	v := url.Values{"name": {"Ada Lovelace"}, "email": {email}, "company": {"Analytical"}, "topic": {"Sales"},
		"message": {"Hello"}, "consent": {"yes"}, "utm_source": {"newsletter"}, "utm_campaign": {"winter"}}
	if tok != "" {
		v.Set("_token", tok)
	}
	return v
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// postForm posts form-encoded, as a browser without JavaScript does.
func (fe *formEnv) postForm(t *testing.T, v url.Values, header ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", fe.e.URL+"/f/acme/contact", strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// postJSON posts as fetch does.
func (fe *formEnv) postJSON(t *testing.T, v url.Values, header ...string) (int, http.Header, map[string]any) {
	t.Helper()
	m := map[string]string{}
	for k := range v {
		m[k] = v.Get(k)
	}
	b, _ := json.Marshal(m)
	req, _ := http.NewRequest("POST", fe.e.URL+"/f/acme/contact", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	rb, _ := io.ReadAll(res.Body)
	_ = json.Unmarshal(rb, &out)
	return res.StatusCode, res.Header, out
}

func (fe *formEnv) leadCount(t *testing.T) int {
	return countRows(t, fe.e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_id = ?`, fe.ten.ID, fe.src)
}

func (fe *formEnv) waitLeads(t *testing.T, n int) {
	t.Helper()
	apptest.Eventually(t, 10*time.Second, fmt.Sprintf("%d leads", n), func() bool { return fe.leadCount(t) == n })
}

func TestFormsAPI(t *testing.T) {
	fe := newFormEnv(t, "web_forms_api", nil)
	e, ten := fe.e, fe.ten
	if fe.form["slug"] != "contact" || fe.src == "" || !strings.HasSuffix(fe.form["url"].(string), "/f/acme/contact") {
		t.Fatalf("created form: %v", fe.form)
	}
	// The form's own source, of kind form.
	res := e.Do("GET", "/api/v1/sources/"+fe.src, ten.Token, nil)
	var src map[string]any
	res.JSON(t, &src)
	if res.Status != 200 || src["kind"] != "form" || src["slug"] != "form-contact" {
		t.Fatalf("form source: %d %v", res.Status, src)
	}
	// Not made through the sources API.
	if res := e.Do("POST", "/api/v1/sources", ten.Token, map[string]any{"slug": "x1", "name": "x", "kind": "form"}); res.Status != 422 {
		t.Fatalf("sources API made a form source: %d", res.Status)
	}
	if res := e.Do("GET", "/api/v1/forms", ten.Token, nil); res.Status != 200 || !strings.Contains(string(res.Body), fe.id) {
		t.Fatalf("list: %d %s", res.Status, res.Body)
	}
	res = e.Do("PATCH", "/api/v1/forms/"+fe.id, ten.Token, map[string]any{"name": "Talk to us", "success": map[string]any{"message": "Thanks!"}})
	var f map[string]any
	res.JSON(t, &f)
	if res.Status != 200 || f["name"] != "Talk to us" || len(f["fields"].([]any)) != 5 {
		t.Fatalf("patch: %d %s", res.Status, res.Body)
	}
	for name, body := range map[string]map[string]any{
		"foreign redirect": {"success": map[string]any{"redirect_url": "https://evil.example/thanks"}},
		"bad field type":   {"fields": []map[string]any{{"name": "a", "label": "A", "type": "file"}}},
		"reserved name":    {"fields": []map[string]any{{"name": "utm_source", "label": "A", "type": "text"}}},
		"select no option": {"fields": []map[string]any{{"name": "a", "label": "A", "type": "select"}}},
		"bad origin":       {"allowed_origins": []string{"https://x.example/path"}},
		"captcha secret":   {"captcha": map[string]any{"provider": "turnstile", "site_key": "k"}},
		"slug change":      {"slug": "other"},
	} {
		if res := e.Do("PATCH", "/api/v1/forms/"+fe.id, ten.Token, body); res.Status != 422 {
			t.Errorf("%s: %d %s", name, res.Status, res.Body)
		}
	}
	if res := e.Do("PATCH", "/api/v1/forms/"+fe.id, ten.Token, map[string]any{"success": map[string]any{"redirect_url": "http://127.0.0.1:1/thanks"}}); res.Status != 200 {
		t.Fatalf("allowed redirect: %d %s", res.Status, res.Body)
	}
	// Taken slug.
	if res := e.Do("POST", "/api/v1/forms", ten.Token, map[string]any{"slug": "contact", "name": "Again",
		"fields": []map[string]any{{"name": "email", "label": "E-mail", "type": "email"}}}); res.Status != 409 {
		t.Fatalf("taken slug: %d %s", res.Status, res.Body)
	}
	// Another tenant sees nothing of it, and its page is not theirs.
	other := e.Tenant("other")
	for _, m := range []string{"GET", "PATCH", "DELETE"} {
		var body any
		if m == "PATCH" {
			body = map[string]any{"name": "x"}
		}
		if res := e.Do(m, "/api/v1/forms/"+fe.id, other.Token, body); res.Status != 404 {
			t.Errorf("other tenant %s: %d", m, res.Status)
		}
	}
	if res := e.Do("GET", "/api/v1/forms", other.Token, nil); strings.Contains(string(res.Body), fe.id) {
		t.Fatal("other tenant lists the form")
	}
	if res := e.Do("GET", "/f/other/contact", "", nil); res.Status != 404 {
		t.Fatalf("form under another tenant: %d", res.Status)
	}
	if res := e.Do("DELETE", "/api/v1/forms/"+fe.id, ten.Token, nil); res.Status != 204 {
		t.Fatalf("delete: %d", res.Status)
	}
	if res := e.Do("GET", "/f/acme/contact", "", nil); res.Status != 404 {
		t.Fatalf("deleted form's page: %d", res.Status)
	}
	// A new form of the same slug takes up the old one's source (its
	// deliveries and leads).
	res = e.Do("POST", "/api/v1/forms", ten.Token, map[string]any{"slug": "contact", "name": "Contact again",
		"fields": []map[string]any{{"name": "email", "label": "E-mail", "type": "email"}}})
	var again map[string]any
	res.JSON(t, &again)
	if res.Status != 201 || again["source_id"] != fe.src {
		t.Fatalf("re-created form: %d %s (source %s before)", res.Status, res.Body, fe.src)
	}
	// A webhook source's slug is not taken over.
	e.Do("POST", "/api/v1/sources", ten.Token, map[string]any{"slug": "form-taken", "name": "Hook", "kind": "standard"})
	if res := e.Do("POST", "/api/v1/forms", ten.Token, map[string]any{"slug": "taken", "name": "T",
		"fields": []map[string]any{{"name": "email", "label": "E-mail", "type": "email"}}}); res.Status != 409 {
		t.Fatalf("a webhook source's slug: %d %s", res.Status, res.Body)
	}
}

func TestFormSubmitCreatesLeadWithAttributionAndConsent(t *testing.T) {
	fe := newFormEnv(t, "web_forms_submit", nil)
	e := fe.e
	// The page: in the tenant's name, a token, the last touch as hidden
	// fields, the first touch in a cookie.
	req, _ := http.NewRequest("GET", e.URL+"/f/acme/contact?utm_source=google&utm_campaign=spring&gclid=abc", nil)
	req.Header.Set("Referer", "https://search.example/")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{"ACME", "Contact us", `name="_token"`, `name="utm_campaign" value="spring"`, `for="f-email"`, `name="website"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	var cookie *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "lp_ft" {
			cookie = c
		}
	}
	if cookie == nil || cookie.MaxAge != 90*86400 {
		t.Fatalf("first-touch cookie: %v", res.Cookies())
	}
	// A later visit from a newsletter submits: last touch newsletter,
	// first touch google from the cookie.
	v := fe.values(fe.token(t, 5*time.Second), "ada@example.com")
	r2, _ := fe.postForm(t, v, "Cookie", "lp_ft="+cookie.Value)
	if r2.StatusCode != http.StatusSeeOther || r2.Header.Get("Location") != "/f/acme/contact/thanks" {
		t.Fatalf("submit: %d %s", r2.StatusCode, r2.Header.Get("Location"))
	}
	fe.waitLeads(t, 1)
	id := leadByRef(t, e, fe.ten.ID, "ada@example.com")
	lr := e.Do("GET", "/api/v1/leads/"+id, fe.ten.Token, nil)
	var lead struct {
		Email       string `json:"email"`
		Name        string `json:"name"`
		Company     string `json:"company"`
		Attribution struct {
			First map[string]string `json:"first"`
			Last  map[string]string `json:"last"`
		} `json:"attribution"`
		Consents []map[string]any `json:"consents"`
	}
	lr.JSON(t, &lead)
	if lead.Name != "Ada Lovelace" || lead.Company != "Analytical" {
		t.Fatalf("lead: %s", lr.Body)
	}
	if lead.Attribution.First["utm_source"] != "google" || lead.Attribution.First["gclid"] != "abc" ||
		lead.Attribution.First["referrer"] != "https://search.example/" || lead.Attribution.Last["utm_source"] != "newsletter" ||
		lead.Attribution.Last["utm_campaign"] != "winter" || lead.Attribution.Last["at"] == "" {
		t.Fatalf("attribution: %s", lr.Body)
	}
	if len(lead.Consents) != 1 || lead.Consents[0]["granted"] != true || lead.Consents[0]["purpose"] != "Contact us" ||
		lead.Consents[0]["form_id"] != fe.id || lead.Consents[0]["text_sha256"] == "" || lead.Consents[0]["ip"] != "127.0.0.1" {
		t.Fatalf("consents: %s", lr.Body)
	}
	// A second submission of the person (a new visit): one lead, first
	// touch kept, last touch the new one, two consent records.
	v2 := fe.values(fe.token(t, 3*time.Second), "ada@example.com")
	v2.Set("utm_source", "linkedin")
	if r, _ := fe.postForm(t, v2, "Cookie", "lp_ft="+cookie.Value); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("second submit: %d", r.StatusCode)
	}
	apptest.Eventually(t, 10*time.Second, "second consent", func() bool {
		lr = e.Do("GET", "/api/v1/leads/"+id, fe.ten.Token, nil)
		lr.JSON(t, &lead)
		return len(lead.Consents) == 2
	})
	if fe.leadCount(t) != 1 || lead.Attribution.First["utm_source"] != "google" || lead.Attribution.Last["utm_source"] != "linkedin" {
		t.Fatalf("after a second submission: %d leads, %s", fe.leadCount(t), lr.Body)
	}
	// The person's export holds the consents; the erasure removes them.
	ex := e.Do("GET", "/api/v1/leads/"+id+"/export", fe.ten.Token, nil)
	if ex.Status != 200 || !strings.Contains(string(ex.Body), `"consents":[{`) || !strings.Contains(string(ex.Body), "I agree that Acme") {
		t.Fatalf("export: %d %s", ex.Status, ex.Body)
	}
	if er := e.Do("POST", "/api/v1/leads/"+id+"/erase", fe.ten.Token, nil, "Idempotency-Key", "erase-1"); er.Status != 200 {
		t.Fatalf("erase: %d %s", er.Status, er.Body)
	}
	if n := countRows(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND source_id = ? AND payload LIKE '%I agree%'`, fe.ten.ID, fe.src); n != 0 {
		t.Fatalf("%d deliveries still hold the consent text", n)
	}
	// Success page.
	if res := e.Do("GET", "/f/acme/contact/thanks", "", nil); res.Status != 200 || !strings.Contains(string(res.Body), forms.DefaultSuccess) {
		t.Fatalf("thanks: %d", res.Status)
	}
}

// 50 concurrent posts of one token: one lead, one accepted, 49 duplicate.
func TestFormConcurrentPostsOfOneToken(t *testing.T) {
	fe := newFormEnv(t, "web_forms_race", nil)
	v := fe.values(fe.token(t, 5*time.Second), "race@example.com")
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			status, _, out := fe.postJSON(t, v)
			mu.Lock()
			counts[fmt.Sprintf("%d %v", status, out["status"])]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	if counts["201 accepted"] != 1 || counts["201 duplicate"] != 49 {
		t.Fatalf("answers: %v", counts)
	}
	fe.waitLeads(t, 1)
	time.Sleep(300 * time.Millisecond)
	if n := fe.leadCount(t); n != 1 {
		t.Fatalf("%d leads", n)
	}
	if n := countRows(t, fe.e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND source_id = ?`, fe.ten.ID, fe.src); n != 1 {
		t.Fatalf("%d deliveries", n)
	}
	// A reload-and-resubmit of the page (form-encoded, same token) is the
	// same submission: the success page again, nothing new.
	if r, _ := fe.postForm(t, v); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("resubmit: %d", r.StatusCode)
	}
	// Without a token the body's hash dedupes.
	nv := fe.values("", "plain@example.com")
	s1, _, o1 := fe.postJSON(t, nv)
	s2, _, o2 := fe.postJSON(t, nv)
	if s1 != 201 || o1["status"] != "accepted" || s2 != 201 || o2["status"] != "duplicate" {
		t.Fatalf("tokenless: %d %v, %d %v", s1, o1, s2, o2)
	}
	fe.waitLeads(t, 2)
}

func TestFormBadInput(t *testing.T) {
	fe := newFormEnv(t, "web_forms_bad", map[string]any{"allowed_origins": []string{"http://allowed.example"}})
	e := fe.e
	other := e.Do("POST", "/api/v1/forms", fe.ten.Token, map[string]any{"slug": "other", "name": "Other",
		"fields": []map[string]any{{"name": "email", "label": "E-mail", "type": "email"}}})
	var of map[string]any
	other.JSON(t, &of)
	otherSecrets, _ := e.App.Sources.Secrets(context.Background(), fe.ten.ID, of["source_id"].(string))
	secrets, _ := e.App.Sources.Secrets(context.Background(), fe.ten.ID, fe.src)

	refused := func(name string, v url.Values, wantStatus int, wantReason string) {
		t.Helper()
		status, h, out := fe.postJSON(t, v)
		if status != wantStatus || (wantReason != "" && out["reason"] != wantReason) {
			t.Errorf("%s: %d %v", name, status, out)
		}
		if status == 429 && h.Get("Retry-After") == "" {
			t.Errorf("%s: no Retry-After", name)
		}
	}
	refused("another form's token", fe.values(forms.NewToken(otherSecrets[0], of["id"].(string), time.Now().Add(-5*time.Second)), "a@example.com"), 400, "bad_token")
	refused("a token older than 24 h", fe.values(forms.NewToken(secrets[0], fe.id, time.Now().Add(-25*time.Hour)), "a@example.com"), 400, "bad_token")
	forged := fe.token(t, 5*time.Second)
	refused("a forged token", fe.values(forged[:len(forged)-3]+"AAA", "a@example.com"), 400, "bad_token")
	refused("a token of our own shape with a guessed key", fe.values(forms.NewToken("guess", fe.id, time.Now().Add(-5*time.Second)), "a@example.com"), 400, "bad_token")
	hp := fe.values(fe.token(t, 5*time.Second), "a@example.com")
	hp.Set("website", "http://spam.example")
	refused("a filled honeypot", hp, 422, "spam_honeypot")
	refused("a submit 300 ms after render", fe.values(fe.token(t, 300*time.Millisecond), "a@example.com"), 422, "too_fast")

	// A missing required field: the page again, values kept, the error
	// next to the field, focus on it.
	v := fe.values(fe.token(t, 5*time.Second), "a@example.com")
	v.Del("name")
	r, page := fe.postForm(t, v)
	if r.StatusCode != 422 || !strings.Contains(page, `id="f-name-error"`) || !strings.Contains(page, `value="a@example.com"`) ||
		!strings.Contains(page, `aria-describedby="f-name-error"`) || !strings.Contains(page, "autofocus") {
		t.Errorf("missing required: %d\n%s", r.StatusCode, page)
	}
	// An e-mail that is not one.
	v = fe.values(fe.token(t, 5*time.Second), "not-an-email")
	status, _, out := fe.postJSON(t, v)
	if errs, _ := out["errors"].(map[string]any); status != 422 || errs["email"] == nil {
		t.Errorf("bad e-mail: %d %v", status, out)
	}
	// 10,000 fields; a 1 MiB textarea.
	var many strings.Builder
	many.WriteString("_token=" + url.QueryEscape(fe.token(t, 5*time.Second)))
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(&many, "&f%d=1", i)
	}
	req, _ := http.NewRequest("POST", e.URL+"/f/acme/contact", strings.NewReader(many.String()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 413 {
		t.Errorf("10,000 fields: %v %v", err, res)
	}
	big := fe.values(fe.token(t, 5*time.Second), "a@example.com")
	big.Set("message", strings.Repeat("x", 1<<20))
	req, _ = http.NewRequest("POST", e.URL+"/f/acme/contact", strings.NewReader(big.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 413 {
		t.Errorf("1 MiB textarea: %v %v", err, res)
	}
	// CORS: a preflight from a foreign origin is refused, an allowed one
	// answered; a fetch from a foreign origin stores nothing.
	pre := func(origin string) *http.Response {
		req, _ := http.NewRequest("OPTIONS", e.URL+"/f/acme/contact", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := pre("https://evil.example"); res.StatusCode != 403 || res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("foreign preflight: %d %v", res.StatusCode, res.Header)
	}
	if res := pre("http://allowed.example"); res.StatusCode != 204 || res.Header.Get("Access-Control-Allow-Origin") != "http://allowed.example" {
		t.Errorf("allowed preflight: %d %v", res.StatusCode, res.Header)
	}
	if status, _, _ := fe.postJSON(t, fe.values(fe.token(t, 5*time.Second), "cors@example.com"), "Origin", "https://evil.example"); status != 403 {
		t.Errorf("foreign fetch: %d", status)
	}
	if status, h, _ := fe.postJSON(t, fe.values(fe.token(t, 5*time.Second), "cors@example.com"), "Origin", "http://allowed.example"); status != 201 ||
		h.Get("Access-Control-Allow-Origin") != "http://allowed.example" {
		t.Errorf("allowed fetch: %d %v", status, h)
	}
	fe.waitLeads(t, 1)
	// The refusals are listed with their reasons.
	apptest.Eventually(t, 10*time.Second, "rejections listed", func() bool {
		res := e.Do("GET", "/api/v1/sources/"+fe.src+"/rejections", fe.ten.Token, nil)
		for _, reason := range []string{"bad_token", "spam_honeypot", "too_fast"} {
			if !strings.Contains(string(res.Body), `"reason":"`+reason+`"`) {
				return false
			}
		}
		return true
	})
	if n := fe.leadCount(t); n != 1 {
		t.Fatalf("refused submissions made leads: %d", n)
	}
}

// 200 submits a minute from one address: the form's per-address limit (10)
// passes, the rest are 429 with Retry-After and store nothing.
func TestFormRateLimit(t *testing.T) {
	fe := newFormEnv(t, "web_forms_rate", nil)
	counts := map[int]int{}
	for i := 0; i < 200; i++ {
		status, h, _ := fe.postJSON(t, fe.values(fe.token(t, 5*time.Second), fmt.Sprintf("p%d@example.com", i)))
		counts[status]++
		if status == 429 && h.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
	}
	// A minute window may turn during the loop: at most twice the limit.
	if counts[201] < 10 || counts[201] > 20 || counts[201]+counts[429] != 200 {
		t.Fatalf("answers: %v", counts)
	}
	fe.waitLeads(t, counts[201])
}

// Two servers of one installation behind a balancer share the limits
// (counted in Redis): per address, then per form, whichever server a
// submission reaches; a retry of a counted submission on the other server
// is a duplicate, not a 429.
func TestFormRateLimitAcrossServers(t *testing.T) {
	opts := apptest.Options{RedisDB: apptest.RedisWeb, Worker: true, Env: map[string]string{"LEADPIPE_TRUST_PROXY": "true"}}
	fe := newFormEnvOn(t, apptest.New(t, "web_forms_rate2", opts), map[string]any{
		"limits": map[string]any{"per_ip_per_minute": 4, "per_form_per_minute": 6}})
	opts.Worker = false
	other := *fe
	other.e = fe.e.Replica(t, opts)
	if s := time.Now().Second(); s > 45 { // one minute window for the whole test
		time.Sleep(time.Duration(61-s) * time.Second)
	}
	servers := []*formEnv{fe, &other}
	post := func(i int, ip string) (int, string, url.Values) {
		v := fe.values(fe.token(t, 5*time.Second), fmt.Sprintf("r%s-%d@example.com", ip, i))
		status, h, out := servers[i%2].postJSON(t, v, "X-Forwarded-For", ip)
		if status == 429 && h.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
		s, _ := out["status"].(string)
		return status, s, v
	}
	var first url.Values
	counts := map[int]int{}
	for i := 0; i < 8; i++ {
		status, _, v := post(i, "203.0.113.7")
		counts[status]++
		if first == nil && status == 201 {
			first = v
		}
	}
	if counts[201] != 4 || counts[429] != 4 {
		t.Fatalf("one address over two servers: %v, want 4 accepted of its 4 a minute", counts)
	}
	// The retry reaches the other server: duplicate.
	for _, s := range servers {
		if status, _, out := s.postJSON(t, first, "X-Forwarded-For", "203.0.113.7"); status != 201 || out["status"] != "duplicate" {
			t.Fatalf("retry of a counted submission: %d %v", status, out)
		}
	}
	counts = map[int]int{}
	for i := 0; i < 8; i++ {
		status, _, _ := post(i, fmt.Sprintf("198.51.100.%d", i))
		counts[status]++
	}
	if counts[201] != 2 || counts[429] != 6 {
		t.Fatalf("the form over two servers: %v, want the 2 left of its 6 a minute", counts)
	}
	fe.waitLeads(t, 6)
}

// The captcha is checked server-side at the provider (a fake one on
// loopback): a rejected answer is refused; a provider that cannot be
// reached keeps the submission failed with the reason, and a reprocess
// makes the lead.
func TestFormCaptcha(t *testing.T) {
	fe := newFormEnv(t, "web_forms_captcha", map[string]any{"captcha": map[string]any{"provider": "turnstile", "site_key": "site-1", "secret": "sekret"}})
	e := fe.e
	var mu sync.Mutex
	var got []url.Values
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		got = append(got, r.PostForm)
		mu.Unlock()
		ok := r.PostForm.Get("secret") == "sekret" && r.PostForm.Get("response") == "good"
		_ = json.NewEncoder(w).Encode(map[string]any{"success": ok})
	}))
	defer provider.Close()
	e.App.Web.Forms.SetCaptchaURLs(map[string]string{"turnstile": provider.URL})
	if res := e.Do("GET", "/f/acme/contact", "", nil); !strings.Contains(string(res.Body), `data-sitekey="site-1"`) {
		t.Fatal("page lacks the captcha widget")
	}
	bad := fe.values(fe.token(t, 5*time.Second), "bot@example.com")
	bad.Set("cf-turnstile-response", "bad")
	if status, _, out := fe.postJSON(t, bad); status != 422 || out["reason"] != "captcha_failed" {
		t.Fatalf("rejected answer: %d %v", status, out)
	}
	good := fe.values(fe.token(t, 5*time.Second), "human@example.com")
	good.Set("cf-turnstile-response", "good")
	if status, _, out := fe.postJSON(t, good); status != 201 || out["status"] != "accepted" {
		t.Fatalf("good answer: %d %v", status, out)
	}
	fe.waitLeads(t, 1)
	mu.Lock()
	if len(got) != 2 || got[1].Get("remoteip") != "127.0.0.1" {
		t.Errorf("provider saw %v", got)
	}
	mu.Unlock()
	// The provider is down.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + l.Addr().String()
	l.Close()
	e.App.Web.Forms.SetCaptchaURLs(map[string]string{"turnstile": dead})
	held := fe.values(fe.token(t, 5*time.Second), "held@example.com")
	held.Set("cf-turnstile-response", "good")
	if status, _, out := fe.postJSON(t, held); status != 201 {
		t.Fatalf("provider down: %d %v", status, out)
	}
	var dl struct {
		Items []struct {
			ID        string  `json:"id"`
			State     string  `json:"state"`
			LastError *string `json:"last_error"`
		} `json:"items"`
	}
	e.Do("GET", "/api/v1/sources/"+fe.src+"/deliveries?state=failed", fe.ten.Token, nil).JSON(t, &dl)
	if len(dl.Items) != 1 || dl.Items[0].LastError == nil || !strings.Contains(*dl.Items[0].LastError, "captcha") {
		t.Fatalf("held delivery: %+v", dl)
	}
	time.Sleep(1500 * time.Millisecond) // the sweeper leaves it alone
	if n := fe.leadCount(t); n != 1 {
		t.Fatalf("a held submission made a lead: %d", n)
	}
	if res := e.Do("POST", "/api/v1/deliveries/"+dl.Items[0].ID+"/reprocess", fe.ten.Token, nil); res.Status != 202 {
		t.Fatalf("reprocess: %d %s", res.Status, res.Body)
	}
	fe.waitLeads(t, 2)
}
