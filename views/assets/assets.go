// Package assets embeds the static files of the web UI (stylesheet, the
// vendored htmx and a small progressive-enhancement script) and serves them
// with long-lived cache headers behind content-hashed URLs.
package assets

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FS holds the embedded asset files. htmx.min.js is htmx 2.x vendored from
// the npm package htmx.org (0BSD, see htmx.LICENSE); no CDN is ever used.
//
//go:embed app.css staff.css app.js htmx.min.js htmx.LICENSE
var FS embed.FS

// Prefix is the URL path under which Handler expects to be mounted.
const Prefix = "/assets/"

type asset struct {
	name  string
	body  []byte
	gz    []byte // nil when compression does not pay off
	hash  string // first 12 hex digits of the SHA-256 of body
	ctype string
}

var (
	loadOnce sync.Once
	byName   map[string]*asset
)

// load reads and hashes every embedded file once; the files are compiled
// into the binary, so doing this lazily keeps package init side-effect free.
func load() map[string]*asset {
	loadOnce.Do(func() {
		byName = map[string]*asset{}
		entries, err := fs.ReadDir(FS, ".")
		if err != nil {
			panic("assets: embedded FS unreadable: " + err.Error())
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			body, err := FS.ReadFile(e.Name())
			if err != nil {
				panic("assets: embedded file unreadable: " + err.Error())
			}
			sum := sha256.Sum256(body)
			a := &asset{
				name:  e.Name(),
				body:  body,
				hash:  hex.EncodeToString(sum[:])[:12],
				ctype: contentType(e.Name()),
			}
			a.gz = gzipIfSmaller(body)
			byName[e.Name()] = a
		}
	})
	return byName
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".css":
		return "text/css; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".LICENSE", ".txt":
		return "text/plain; charset=utf-8"
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

func gzipIfSmaller(body []byte) []byte {
	if len(body) < 1024 {
		return nil
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(body)
	_ = zw.Close()
	if buf.Len() >= len(body)*9/10 {
		return nil
	}
	return buf.Bytes()
}

// Path returns the URL of the named asset with a content-hash query, e.g.
// "/assets/app.css?v=3f2a9c01b7de". The URL changes whenever the file does,
// so it can be cached forever. An unknown name yields the plain path.
func Path(name string) string {
	name = strings.TrimPrefix(name, "/")
	a, ok := load()[name]
	if !ok {
		return Prefix + name
	}
	return Prefix + name + "?v=" + a.hash
}

// Handler serves the embedded assets. Mount it at Prefix ("/assets/"); it
// also accepts paths with the prefix already stripped. Requests whose ?v=
// matches the current content hash are cacheable for a year (immutable);
// others get a short max-age so a stale link never pins an old file.
func Handler() http.Handler {
	files := load()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, Prefix)
		name = strings.TrimPrefix(name, "/")
		a, ok := files[name]
		if !ok || strings.Contains(name, "/") {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", a.ctype)
		h.Set("X-Content-Type-Options", "nosniff")
		if r.URL.Query().Get("v") == a.hash {
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			h.Set("Cache-Control", "public, max-age=300")
		}
		body, etag := a.body, `"`+a.hash+`"`
		if a.gz != nil {
			h.Add("Vary", "Accept-Encoding")
			if acceptsGzip(r) {
				body, etag = a.gz, `"`+a.hash+`-gz"`
				h.Set("Content-Encoding", "gzip")
			}
		}
		h.Set("ETag", etag)
		// No modtime: the ETag (content hash) drives conditional requests and
		// stays identical across replicas and restarts.
		http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(body))
	})
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			params = strings.ReplaceAll(params, " ", "")
			if !strings.HasPrefix(params, "q=") {
				return true
			}
			q, err := strconv.ParseFloat(params[2:], 64)
			return err == nil && q > 0
		}
	}
	return false
}
