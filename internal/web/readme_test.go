package web_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/config"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

// curlDocs are the pages whose curl examples must run as pasted: the
// README, the API guide and the operator's page.
var curlDocs = []string{"README.md", "docs/API.md", "docs/OPERATING.md"}

// readDoc reads a file of the repository by its path from the root.
func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readmeCurls returns the curl commands of curlDocs, continuation lines
// joined.
func readmeCurls(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, doc := range curlDocs {
		out = append(out, docCurls(readDoc(t, doc))...)
	}
	return out
}

func docCurls(text string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(text, "\n") {
		raw := strings.TrimSpace(line)
		l := strings.TrimSpace(strings.Trim(raw, "`"))
		if cur.Len() == 0 {
			// `curl …` inside a sentence ends at its closing backtick.
			if i := strings.Index(raw, "`curl "); i >= 0 {
				if j := strings.IndexByte(raw[i+1:], '`'); j > 0 {
					out = append(out, raw[i+1:i+1+j])
					continue
				}
			}
			i := strings.Index(l, "curl ")
			if i < 0 {
				continue
			}
			l = l[i:]
		}
		if strings.HasSuffix(l, `\`) {
			cur.WriteString(strings.TrimSuffix(l, `\`) + " ")
			continue
		}
		cur.WriteString(l)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

var curlData = regexp.MustCompile(`(^|\s)(-d|--data|--data-raw)\s`)

// TestReadmeCurlsSendJSONAsJSON: every README curl with a body says it is
// JSON (the API answers 400 to a body without Content-Type), and the
// outbound endpoints example, as pasted with the demo values, makes an
// endpoint.
func TestReadmeCurlsSendJSONAsJSON(t *testing.T) {
	curls := readmeCurls(t)
	if len(curls) < 5 {
		t.Fatalf("found %d curl commands in the README", len(curls))
	}
	var endpoint string
	for _, c := range curls {
		if curlData.MatchString(c) && !strings.Contains(c, "Content-Type: application/json") {
			t.Errorf("README curl posts a body without Content-Type: %s", c)
		}
		if strings.Contains(c, "/api/v1/endpoints") && curlData.MatchString(c) {
			endpoint = c
		}
	}
	if endpoint == "" {
		t.Fatal("no endpoints example in the docs")
	}
	// Run it: the body and headers as written, against a test server.
	e := uiEnv(t, "web_readme")
	acme := e.Tenant("acme")
	body := regexp.MustCompile(`-d '([^']*)'`).FindStringSubmatch(endpoint)
	if body == nil {
		t.Fatalf("no body in %s", endpoint)
	}
	headers := []string{}
	for _, m := range regexp.MustCompile(`-H '([^:']+): ([^']*)'`).FindAllStringSubmatch(endpoint, -1) {
		headers = append(headers, m[1], m[2])
	}
	req, _ := http.NewRequest("POST", e.URL+"/api/v1/endpoints", strings.NewReader(body[1]))
	req.Header.Set("Authorization", "Bearer "+acme.Token)
	if res := apptest.Send(t, http.DefaultClient, req, headers...); res.Status != 201 {
		t.Fatalf("the README's endpoints example answers %d %s", res.Status, res.Body)
	}
}

// readmeVars are the shell variables the README's API examples use, with
// what each one holds (the README says so above its first example).
var readmeVars = []string{"TOKEN", "LEADPIPE_ADMIN_TOKEN", "SOURCE", "DELIVERY", "TOKEN_ID", "USER_ID", "LEAD"}

// readmeSkipped are README curls that cannot run against a test app, by a
// substring of the command, with the reason. Empty today: every example
// runs.
var readmeSkipped = map[string]string{}

// TestReadmeCurlsWork runs every README curl that calls the API, as
// pasted, through sh and curl against a test app holding data like the
// demo's (a tenant, a generic source with a delivery, a second token, a
// staff user), the README's shell variables set to it and localhost:8080
// pointed at the test server. Each must answer 2xx; `set -u` fails an
// example that uses a variable the README does not name.
func TestReadmeCurlsWork(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl binary (apt-get install curl): the README's examples cannot be run as pasted")
	}
	e := uiEnv(t, "web_readme_run")
	demo := e.Tenant("demo")
	cfg := kinds.SampleConfig(kinds.Generic)
	src, secret := e.Source(demo.ID, sources.CreateInput{Slug: "generic", Name: "Partner CRM (generic HMAC)", Kind: kinds.Generic, Config: cfg})
	body := kinds.SampleBody(kinds.Generic, "evt-1", "lead-1", kinds.Lead{Email: "ada@example.com", Name: "Ada Lovelace"}, time.Now())
	h, body, err := kinds.Sign(kinds.Generic, cfg, secret, "evt-1", body, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", e.URL+"/hooks/demo/generic", bytes.NewReader(body))
	req.Header = h
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var accepted struct {
		DeliveryID string `json:"delivery_id"`
	}
	_ = json.NewDecoder(res.Body).Decode(&accepted)
	res.Body.Close()
	if res.StatusCode != 200 || accepted.DeliveryID == "" {
		t.Fatalf("demo delivery: %d %+v", res.StatusCode, accepted)
	}
	var tok, user struct{ ID string }
	if r := e.Do("POST", "/api/v1/tokens", demo.Token, map[string]any{"name": "zapier", "scopes": []string{"leads:read"}}); r.Status != 201 {
		t.Fatalf("token: %d %s", r.Status, r.Body)
	} else {
		r.JSON(t, &tok)
	}
	if r := e.Do("POST", "/api/v1/users", demo.Token, map[string]any{"email": "lee@demo.test", "name": "Lee", "role": "staff", "password": "a-long-password"}); r.Status != 201 {
		t.Fatalf("user: %d %s", r.Status, r.Body)
	} else {
		r.JSON(t, &user)
	}
	var lead struct{ ID string }
	if r := e.Do("POST", "/api/v1/leads", demo.Token, map[string]any{"name": "Grace Hopper", "email": "grace@example.com"},
		"Idempotency-Key", "readme-lead"); r.Status != 201 {
		t.Fatalf("lead: %d %s", r.Status, r.Body)
	} else {
		r.JSON(t, &lead)
	}
	env := append(os.Environ(),
		"TOKEN="+demo.Token, "LEADPIPE_ADMIN_TOKEN=test-admin-token-0123456789", "SOURCE="+src.ID,
		"DELIVERY="+accepted.DeliveryID, "TOKEN_ID="+tok.ID, "USER_ID="+user.ID, "LEAD="+lead.ID)
	base := strings.TrimPrefix(e.URL, "http://")
	dir := t.TempDir() // `-o leads.csv` lands here
	ran := 0
	for _, c := range readmeCurls(t) {
		if !strings.Contains(c, "/api/") {
			continue
		}
		if reason := skippedBecause(c); reason != "" {
			t.Logf("skipped (%s): %s", reason, c)
			continue
		}
		ran++
		cmd := strings.ReplaceAll(c, "http://localhost:8080", "http://"+base)
		cmd = strings.ReplaceAll(cmd, "localhost:8080", base)
		// Quiet, bounded, and the status as the last line of the output.
		cmd = "set -u; curl -sS --max-time 20 -w '\\n%{http_code}' " + strings.TrimPrefix(cmd, "curl ")
		sh := exec.Command("sh", "-c", cmd)
		sh.Env, sh.Dir = env, dir
		out, err := sh.CombinedOutput()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		code := lines[len(lines)-1]
		t.Logf("%s ← %s", code, c)
		if err != nil || len(code) != 3 || code[0] != '2' {
			t.Errorf("README example answers %s (%v):\n  %s\n  %s", code, err, c, strings.Join(lines[:len(lines)-1], "\n  "))
		}
	}
	if ran < 10 {
		t.Fatalf("ran %d README API examples", ran)
	}
}

func skippedBecause(c string) string {
	for sub, reason := range readmeSkipped {
		if strings.Contains(c, sub) {
			return reason
		}
	}
	return ""
}

// TestReadmeIsShortAndItsCommandsAreReal: the README stays a five-minute
// read, the two commands it starts with are executable scripts, every
// `go run ./cmd/…` of the README and the operator's page names a command
// of the repository, and every link of the README points to a file.
func TestReadmeIsShortAndItsCommandsAreReal(t *testing.T) {
	readme := readDoc(t, "README.md")
	if n := strings.Count(readme, "\n"); n > 200 {
		t.Errorf("README.md has %d lines: keep it under 200 and move the rest to docs/", n)
	}
	for _, script := range []string{"scripts/run.sh", "scripts/test.sh"} {
		if !strings.Contains(readme, script) {
			t.Errorf("the README does not name %s", script)
		}
		fi, err := os.Stat(filepath.Join("..", "..", script))
		if err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("%s is not an executable script (%v)", script, err)
		}
	}
	goRun := regexp.MustCompile(`go run (\./cmd/[a-z]+)`)
	for _, doc := range []string{"README.md", "docs/OPERATING.md", "CONTRIBUTING.md"} {
		for _, m := range goRun.FindAllStringSubmatch(readDoc(t, doc), -1) {
			if fi, err := os.Stat(filepath.Join("..", "..", m[1], "main.go")); err != nil || fi.IsDir() {
				t.Errorf("%s runs %s, which is no command", doc, m[1])
			}
		}
	}
	// Pages written on other branches at the same time; each exists once
	// they are merged.
	elsewhere := map[string]bool{"docs/SENDERS.md": true, "docs/FORMS.md": true, "docs/NOTIFICATIONS.md": true}
	for _, m := range regexp.MustCompile(`\]\(([^)#:]+)\)`).FindAllStringSubmatch(readme, -1) {
		if _, err := os.Stat(filepath.Join("..", "..", m[1])); err != nil && !elsewhere[m[1]] {
			t.Errorf("the README links to %s, which does not exist", m[1])
		}
	}
}

// TestOperatingNamesEveryVariable: docs/OPERATING.md describes every
// variable of internal/config's table, and the README and that page name
// no LEADPIPE_ variable the table does not have.
func TestOperatingNamesEveryVariable(t *testing.T) {
	operating := readDoc(t, "docs/OPERATING.md")
	known := map[string]bool{}
	for _, v := range config.Vars {
		known[v.Name] = true
		if !strings.Contains(operating, "`"+v.Name+"`") {
			t.Errorf("docs/OPERATING.md does not describe %s (internal/config's table)", v.Name)
		}
	}
	named := regexp.MustCompile(`LEADPIPE_[A-Z_]+[A-Z]`)
	for _, doc := range []string{"README.md", "docs/OPERATING.md"} {
		for _, name := range named.FindAllString(readDoc(t, doc), -1) {
			if !known[name] && !known[strings.TrimSuffix(name, "_FILE")] {
				t.Errorf("%s names %s, which internal/config does not read", doc, name)
			}
		}
	}
}
