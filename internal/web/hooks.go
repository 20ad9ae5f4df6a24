package web

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/config"
	"leadpipe/internal/webhooks"
)

// Receiver is the webhook ingest path (webhooks.Ingest): Receive stores
// and acknowledges a POST, Handshake answers Meta's GET check.
type Receiver interface {
	Receive(ctx context.Context, c webhooks.Call) (webhooks.Ack, error)
	Handshake(ctx context.Context, tenant, source string, query url.Values) (webhooks.HandshakeAnswer, error)
}

// Hooks is POST (and Meta's GET handshake) /hooks/{tenant}/{source}: the
// HTTP side of the ingest path (docs/ARCHITECTURE.md, "One webhook").
type Hooks struct {
	In  Receiver
	Log *slog.Logger
	// Cfg gives the public URL (LEADPIPE_BASE_URL): HubSpot signs the URI
	// it called, which is BaseURL + path + query, whatever the Host header
	// says; and LEADPIPE_TRUST_PROXY, which takes the client address from
	// X-Forwarded-For (without it the connecting address counts).
	Cfg *config.Config
}

func (h Hooks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tenant, source := chi.URLParam(r, "tenant"), chi.URLParam(r, "source")
	urlSecret := chi.URLParam(r, "url_secret")
	switch r.Method {
	case http.MethodPost:
	case http.MethodGet:
		if urlSecret != "" {
			h.fail(w, r, webhooks.ErrNoHandshake)
			return
		}
		ans, err := h.In.Handshake(r.Context(), tenant, source, r.URL.Query())
		if err != nil {
			h.fail(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if ans.JSON {
			w.Header().Set("Content-Type", "application/json")
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = io.WriteString(w, ans.Body)
		return
	default:
		h.fail(w, r, webhooks.ErrNoHandshake)
		return
	}
	// The limit makes the server stop reading (and close the connection)
	// past the largest body; Receive reports it as too_large.
	body := http.MaxBytesReader(w, r.Body, webhooks.MaxBody)
	ack, err := h.In.Receive(r.Context(), webhooks.Call{Tenant: tenant, Source: source, Header: r.Header,
		Body: tooLargeReader{body}, RemoteAddr: r.RemoteAddr, ContentLength: r.ContentLength,
		Method: r.Method, BaseURL: h.baseURL(), RequestURI: requestURI(r), ClientAddr: ClientAddr(r, h.Cfg != nil && h.Cfg.TrustProxyHeaders),
		URLSecret: urlSecret})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if ack.Status == webhooks.AckDuplicate && ack.Items == nil {
		markDuplicate(r.Context())
	}
	writeAck(w, ack)
}

func (h Hooks) baseURL() string {
	if h.Cfg == nil {
		return ""
	}
	return h.Cfg.BaseURL
}

func (h Hooks) fail(w http.ResponseWriter, r *http.Request, err error) {
	if apperr.CodeOf(err) == apperr.MethodNotAllowed {
		w.Header().Set("Allow", "POST")
	}
	WriteError(w, r, h.Log, err)
}

// tooLargeReader marks the reader's limit error so the domain can tell it
// from a broken connection without knowing net/http.
type tooLargeReader struct{ r io.Reader }

func (t tooLargeReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		err = errBodyTooLarge{err}
	}
	return n, err
}

type errBodyTooLarge struct{ error }

func (errBodyTooLarge) TooLarge() bool { return true }

// writeAck writes the acknowledgement. A single delivery's answer (the
// storm's common case) is written without reflection: its status is one
// of two words and our row ids are ULIDs, nothing to escape.
func writeAck(w http.ResponseWriter, ack webhooks.Ack) {
	if ack.Items != nil {
		WriteJSON(w, http.StatusOK, ack)
		return
	}
	var buf [96]byte
	b := append(buf[:0], `{"status":"`...)
	b = append(b, ack.Status...)
	b = append(b, `","delivery_id":"`...)
	b = append(b, ack.DeliveryID...)
	b = append(b, "\"}\n"...)
	hd := w.Header()
	hd["Content-Type"] = []string{"application/json"} // canonical keys: no canonicalising
	hd["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// ClientAddr is the address a request came from: the connecting peer, or,
// behind a trusted proxy, the last X-Forwarded-For hop (the one that proxy
// appended; the hops before it are whatever the client claimed). Without
// trustProxy a spoofed X-Forwarded-For changes nothing.
func ClientAddr(r *http.Request, trustProxy bool) netip.Addr {
	if trustProxy {
		if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
			hops := strings.Split(xff[len(xff)-1], ",")
			if a, err := netip.ParseAddr(strings.TrimSpace(hops[len(hops)-1])); err == nil {
				return a.Unmap()
			}
		}
	}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap()
	}
	a, _ := netip.ParseAddr(r.RemoteAddr)
	return a.Unmap()
}

// RedactPath hides a secret webhook URL's last segment (/hooks/t/s/…) in
// logs and traces.
func RedactPath(p string) string {
	if !strings.HasPrefix(p, "/hooks/") {
		return p
	}
	if parts := strings.SplitN(p, "/", 6); len(parts) >= 5 && parts[4] != "" {
		return "/hooks/" + parts[2] + "/" + parts[3] + "/…"
	}
	return p
}

// requestURI is the path and query exactly as the sender wrote them (what
// HubSpot signs), else as the URL re-encodes them.
func requestURI(r *http.Request) string {
	if strings.HasPrefix(r.RequestURI, "/") {
		return r.RequestURI
	}
	return r.URL.RequestURI()
}
