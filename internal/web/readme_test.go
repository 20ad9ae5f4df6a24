package web_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"leadpipe/internal/apptest"
)

// readmeCurls returns the README's curl commands, continuation lines joined.
func readmeCurls(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		l := strings.TrimSpace(strings.Trim(strings.TrimSpace(line), "`"))
		if cur.Len() == 0 {
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
		t.Fatal("no endpoints example in the README")
	}
	// Run it: the body and headers as written, against a test server.
	e := apptest.New(t, "web_readme", apptest.Options{RedisDB: apptest.RedisWeb})
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
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 201 {
		t.Fatalf("the README's endpoints example answers %d %s", res.StatusCode, b)
	}
}
