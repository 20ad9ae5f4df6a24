package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/ids"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
	srcviews "leadpipe/views/sources"
)

// rejectionsShown is how many rejected requests the source page lists.
const rejectionsShown = 20

// rejectionRows is the source page's list of its last rejected requests.
func (s *Server) rejectionRows(r *http.Request, tenantID, sourceID string) ([]srcviews.Rejection, error) {
	list, err := s.Rejections.List(r.Context(), tenantID, sourceID, rejectionsShown)
	if err != nil {
		return nil, err
	}
	out := make([]srcviews.Rejection, 0, len(list))
	for _, rj := range list {
		row := srcviews.Rejection{At: rj.At, Reason: rj.Reason, IP: rj.IP, Size: int(rj.Size), BodySHA256: rj.BodySHA256}
		if rj.SkewSeconds != nil {
			row.Skew = skewText(*rj.SkewSeconds)
		}
		for k, v := range rj.Headers {
			row.Headers = append(row.Headers, srcviews.Header{Name: k, Value: v})
		}
		sort.Slice(row.Headers, func(i, j int) bool { return row.Headers[i].Name < row.Headers[j].Name })
		out = append(out, row)
	}
	return out, nil
}

// skewText says how far the sender's clock is off: "signed 1 h 2 min ago".
func skewText(sec int64) string {
	ahead := sec < 0
	if ahead {
		sec = -sec
	}
	d := (time.Duration(sec) * time.Second).Round(time.Second)
	s := d.String()
	if d >= time.Minute {
		s = d.Truncate(time.Minute).String()
		s = s[:len(s)-2] // drop "0s"
	}
	if ahead {
		return "signed " + s + " in the future"
	}
	return "signed " + s + " ago"
}

// uiTestDelivery posts a correctly signed sample delivery through the
// source's real webhook handler (verification, claim, queue: the path a
// sender's request takes) and shows its answer. The sample becomes a lead
// like any delivery; its email is on the reserved example.com domain.
func (s *Server) uiTestDelivery(w http.ResponseWriter, r *http.Request) {
	src, ok := s.postedSource(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	sess := sessionFrom(ctx)
	secrets, err := s.Sources.Secrets(ctx, sess.Tenant.ID, src.ID)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	back := "/sources/" + src.ID + "#rejections"
	flash := s.sendTestDelivery(r, sess.Tenant.Slug, src, secrets)
	s.setFlash(w, r, flash)
	seeOther(w, r, back)
}

func (s *Server) sendTestDelivery(r *http.Request, tenantSlug string, src sources.Source, secrets []string) string {
	if len(secrets) == 0 {
		return "The test delivery was not sent: the source has no signing secret."
	}
	now := time.Now()
	id := "leadpipe-test-" + ids.New()
	body := kinds.SampleBody(src.Kind, id, id, kinds.Lead{Name: "Leadpipe test delivery", Email: "test-delivery@example.com"}, now)
	if body == nil {
		return "Leadpipe has no sample delivery for this kind of source."
	}
	if src.Kind == kinds.Token { // a preset's sender sends its own shape
		var cfg struct{ Preset string }
		_ = json.Unmarshal(src.Config, &cfg)
		if e, ok := kinds.CatalogEntryFor(src.Kind, cfg.Preset); ok && cfg.Preset != "" {
			body = e.Sample
		}
	}
	path := "/hooks/" + tenantSlug + "/" + src.Slug
	base := ""
	if s.Cfg != nil {
		base = s.Cfg.BaseURL
	}
	// Signed exactly as the vendor signs, HubSpot over the public URI.
	h, body, err := kinds.SignTo(src.Kind, src.Config, secrets[0], id, base+path, body, now)
	if err != nil {
		return "The test delivery could not be signed: " + err.Error()
	}
	req := httptest.NewRequestWithContext(r.Context(), http.MethodPost, path, bytes.NewReader(body))
	req.Header = h
	req.RemoteAddr = "127.0.0.1:0"
	rc := chi.NewRouteContext()
	rc.URLParams.Add("tenant", tenantSlug)
	rc.URLParams.Add("source", src.Slug)
	req = req.WithContext(context.WithValue(req.Context(), chi.RouteCtxKey, rc))
	rec := httptest.NewRecorder()
	s.Hooks.ServeHTTP(rec, req)
	var ans struct {
		Status, Detail string
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &ans)
	switch {
	case rec.Code == http.StatusOK:
		return fmt.Sprintf("Test delivery sent to %s: %d %s. It shows in Recent deliveries and becomes the lead “Leadpipe test delivery”.", path, rec.Code, ans.Status)
	case ans.Detail != "":
		return fmt.Sprintf("Test delivery sent to %s: refused with %d, %s.", path, rec.Code, ans.Detail)
	}
	return "Test delivery sent to " + path + ": refused with " + strconv.Itoa(rec.Code) + "."
}
