package assets

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func TestPath(t *testing.T) {
	re := regexp.MustCompile(`^/assets/app\.css\?v=[0-9a-f]{12}$`)
	if p := Path("app.css"); !re.MatchString(p) {
		t.Fatalf("Path(app.css) = %q", p)
	}
	if Path("/app.css") != Path("app.css") {
		t.Fatal("leading slash changes the path")
	}
	if Path("app.js") == Path("htmx.min.js") {
		t.Fatal("different files share a path")
	}
	if p := Path("nope.css"); p != "/assets/nope.css" {
		t.Fatalf("unknown asset = %q", p)
	}
}

func TestEmbeddedFiles(t *testing.T) {
	for _, name := range []string{"app.css", "app.js", "htmx.min.js", "htmx.LICENSE"} {
		b, err := FS.ReadFile(name)
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %v", name, err)
		}
	}
	htmx, _ := FS.ReadFile("htmx.min.js")
	if !bytes.HasPrefix(htmx, []byte("/*! htmx.org 2.")) || !bytes.Contains(htmx[:200], []byte("0BSD")) {
		t.Fatal("htmx.min.js lacks its version and license header")
	}
}

func get(t *testing.T, h http.Handler, target string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestHandler(t *testing.T) {
	h := Handler()
	css, _ := FS.ReadFile("app.css")

	rec := get(t, h, Path("app.css"), nil)
	if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), css) {
		t.Fatalf("status %d, %d bytes", rec.Code, rec.Body.Len())
	}
	if ct := rec.Header().Get("Content-Type"); ct != "text/css; charset=utf-8" {
		t.Fatalf("content type %q", ct)
	}
	if cc := rec.Header().Get("Cache-Control"); !strings.Contains(cc, "max-age=31536000") || !strings.Contains(cc, "immutable") {
		t.Fatalf("versioned cache-control %q", cc)
	}
	if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Fatal("missing nosniff")
	}
	etag := rec.Header().Get("ETag")

	t.Run("unversioned or stale links are cached briefly", func(t *testing.T) {
		for _, target := range []string{"/assets/app.css", "/assets/app.css?v=old"} {
			if cc := get(t, h, target, nil).Header().Get("Cache-Control"); strings.Contains(cc, "immutable") {
				t.Fatalf("%s cache-control %q", target, cc)
			}
		}
	})
	t.Run("conditional request", func(t *testing.T) {
		if rec := get(t, h, Path("app.css"), map[string]string{"If-None-Match": etag}); rec.Code != http.StatusNotModified {
			t.Fatalf("status %d", rec.Code)
		}
	})
	t.Run("gzip", func(t *testing.T) {
		rec := get(t, h, Path("htmx.min.js"), map[string]string{"Accept-Encoding": "br, gzip;q=0.8"})
		if rec.Header().Get("Content-Encoding") != "gzip" {
			t.Fatal("not compressed")
		}
		zr, err := gzip.NewReader(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(zr)
		want, _ := FS.ReadFile("htmx.min.js")
		if !bytes.Equal(got, want) {
			t.Fatal("gzip body differs")
		}
		if rec.Header().Get("Content-Type") != "text/javascript; charset=utf-8" {
			t.Fatalf("content type %q", rec.Header().Get("Content-Type"))
		}
		if rec := get(t, h, Path("htmx.min.js"), map[string]string{"Accept-Encoding": "gzip;q=0"}); rec.Header().Get("Content-Encoding") != "" {
			t.Fatal("compressed although refused")
		}
	})
	t.Run("prefix already stripped", func(t *testing.T) {
		if rec := get(t, http.StripPrefix("/assets", h), "/assets/app.js", nil); rec.Code != http.StatusOK {
			t.Fatalf("status %d", rec.Code)
		}
	})
	t.Run("not found", func(t *testing.T) {
		for _, target := range []string{"/assets/nope.js", "/assets/", "/assets/../assets.go", "/assets/x/app.css"} {
			if rec := get(t, h, target, nil); rec.Code != http.StatusNotFound {
				t.Errorf("%s: status %d", target, rec.Code)
			}
		}
	})
	t.Run("method", func(t *testing.T) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/assets/app.css", nil))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Fatalf("status %d", rec.Code)
		}
	})
}
