package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/clip"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks"
	"leadpipe/internal/webhooks/kinds"
	srcviews "leadpipe/views/sources"
)

// mappingFields are the lead fields the editor offers, in display order.
var mappingFields = []struct{ name, label string }{
	{"email", "Email"}, {"name", "Name"}, {"first_name", "First name"}, {"last_name", "Last name"},
	{"phone", "Phone"}, {"company", "Company"}, {"created_at", "Created at"},
}

func mappingFromConfig(c kinds.GenericConfig) *srcviews.Mapping {
	m := &srcviews.Mapping{SignatureHeader: c.SignatureHeader, Encoding: c.Encoding, Prefix: c.Prefix,
		DeliveryIDHeader: c.DeliveryIDHeader, DeliveryIDPath: c.DeliveryIDPath, NaturalKeyPath: c.NaturalKeyPath,
		EventTimePath: c.EventTimePath}
	if m.Encoding == "" {
		m.Encoding = "hex"
	}
	for _, f := range mappingFields {
		m.Fields = append(m.Fields, srcviews.MappingField{Name: f.name, Label: f.label, Path: c.Fields[f.name]})
	}
	return m
}

// mappingForm reads the editor's form into a config.
func mappingForm(r *http.Request) kinds.GenericConfig {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	c := kinds.GenericConfig{SignatureHeader: v("signature_header"), Encoding: v("encoding"), Prefix: v("prefix"),
		DeliveryIDHeader: v("delivery_id_header"), DeliveryIDPath: v("delivery_id_path"), NaturalKeyPath: v("natural_key_path"),
		EventTimePath: v("event_time_path"), Fields: map[string]string{}}
	for _, f := range mappingFields {
		if p := v("field_" + f.name); p != "" {
			c.Fields[f.name] = p
		}
	}
	return c
}

func (s *Server) genericSource(w http.ResponseWriter, r *http.Request) (sources.Source, bool) {
	src, ok := s.postedSource(w, r)
	if ok && src.Kind != "generic" {
		s.uiError(w, r, apperr.New(apperr.NotFound, "only generic sources have a mapping editor"))
		return src, false
	}
	return src, ok
}

// postedSource parses a posted form and reads the source the URL's {id}
// names; when either fails it has answered with the error page.
func (s *Server) postedSource(w http.ResponseWriter, r *http.Request) (sources.Source, bool) {
	if err := parseForm(w, r); err != nil {
		s.uiError(w, r, err)
		return sources.Source{}, false
	}
	return s.urlSource(w, r)
}

// urlSource reads the signed-in tenant's source the URL's {id} names; on
// an error it has answered with the error page.
func (s *Server) urlSource(w http.ResponseWriter, r *http.Request) (sources.Source, bool) {
	src, err := s.Sources.Get(r.Context(), sessionFrom(r.Context()).Tenant.ID, chi.URLParam(r, "id"))
	if err != nil {
		s.uiError(w, r, err)
		return src, false
	}
	return src, true
}

// uiMappingPreview maps the last 20 deliveries under the edited mapping
// (htmx swaps in the preview; without JavaScript the page comes back with
// the form as typed). Nothing is saved.
func (s *Server) uiMappingPreview(w http.ResponseWriter, r *http.Request) {
	src, ok := s.genericSource(w, r)
	if !ok {
		return
	}
	c := mappingForm(r)
	m := mappingFromConfig(c)
	m.Previewed = true
	cfg, _ := json.Marshal(c)
	items, err := s.DeliveryOps.Preview(r.Context(), sessionFrom(r.Context()).Tenant.ID, src.ID, cfg, 20)
	status := http.StatusOK
	var ae *apperr.Error
	switch {
	case err == nil:
		for _, it := range items {
			row := srcviews.PreviewRow{ID: it.DeliveryID, SenderID: it.SenderID, State: it.State, Email: it.Fields["email"], Name: it.Fields["name"],
				Phone: it.Fields["phone"], Company: it.Fields["company"], EventTime: it.EventTime}
			if it.NaturalKey != nil {
				row.NaturalKey = *it.NaturalKey
			}
			if it.Error != nil {
				row.Error = *it.Error
			}
			m.Preview = append(m.Preview, row)
		}
	case errors.As(err, &ae) && ae.Code == apperr.Invalid:
		m.Errors = ae.Fields
		status = http.StatusUnprocessableEntity
	default:
		s.uiError(w, r, err)
		return
	}
	s.renderSourceWith(w, r, status, src.ID, "", "", "", m)
}

// uiMappingSave stores the edited mapping (PATCH's rules: a 422 re-renders
// the form with the offending settings).
func (s *Server) uiMappingSave(w http.ResponseWriter, r *http.Request) {
	src, ok := s.genericSource(w, r)
	if !ok {
		return
	}
	c := mappingForm(r)
	cfg, _ := json.Marshal(c)
	_, err := s.Sources.Patch(r.Context(), sessionFrom(r.Context()).Tenant.ID, src.ID, sources.PatchInput{Config: cfg})
	var ae *apperr.Error
	if errors.As(err, &ae) && ae.Code == apperr.Invalid {
		m := mappingFromConfig(c)
		m.Errors = ae.Fields
		s.renderSourceWith(w, r, http.StatusUnprocessableEntity, src.ID, "", "", "", m)
		return
	}
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	flash := "Mapping saved."
	if wm, err := s.wouldMap(r, sessionFrom(r.Context()).Tenant.ID, src.ID); err == nil && wm.N > 0 {
		flash += " " + srcviews.FailedWouldMap(wm) + " — reprocess them under Failed deliveries."
	}
	s.renderSourceWith(w, r, http.StatusOK, src.ID, "", "", flash, nil)
}

// uiReprocessFailed reprocesses every failed delivery of the source.
func (s *Server) uiReprocessFailed(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	start := time.Now().Add(-time.Second) // processed_at is the worker's clock
	n, err := s.DeliveryOps.ReprocessSource(r.Context(), sessionFrom(r.Context()).Tenant.ID, id, webhooks.StateFailed)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	flash := "Queued " + strconv.Itoa(n) + " failed deliveries again."
	if n == 1 {
		flash = "Queued 1 failed delivery again."
	}
	// The page after it lists the leads made since this moment.
	s.setFlash(w, r, flash)
	seeOther(w, r, "/sources/"+id+"?reprocessed="+strconv.Itoa(n)+"&since="+strconv.FormatInt(start.UnixMilli(), 10)+"#failed")
}

// guideMapping points the mapping editor at the latest failing delivery:
// its payload as a tree of clickable keys, and the natural key or delivery
// id path that finds nothing in it marked on its field with the error.
func (s *Server) guideMapping(m *srcviews.Mapping, d webhooks.DeliveryItem) {
	if len(m.Errors) > 0 || !json.Valid(d.Raw) {
		return
	}
	m.Tree = payloadTree(d.Raw)
	m.TreeFrom = d.SenderID
	why := "nothing here in the latest failing delivery"
	if d.LastError != nil {
		why = "The latest failing delivery: " + *d.LastError + "."
	}
	check := func(key, path string) {
		if path != "" && !kinds.PathFinds(path, d.Raw) {
			if m.Broken == nil {
				m.Broken = map[string]string{}
			}
			m.Broken["config."+key] = why + " Nothing is at " + path + ": click the right key in the payload."
		}
	}
	// Only the paths a delivery cannot do without: an optional field the
	// sender left out (no phone) is not what broke it.
	check("natural_key_path", m.NaturalKeyPath)
	check("delivery_id_path", m.DeliveryIDPath)
}

// payloadTree turns a JSON document into the editor's tree, keys in their
// order, at most maxTreeNodes keys and maxTreeDepth levels.
func payloadTree(raw []byte) []srcviews.TreeNode {
	budget := maxTreeNodes
	var walk func(v json.RawMessage, path string, depth int) []srcviews.TreeNode
	walk = func(v json.RawMessage, path string, depth int) []srcviews.TreeNode {
		v = bytes.TrimSpace(v)
		if depth > maxTreeDepth || len(v) == 0 {
			return nil
		}
		var out []srcviews.TreeNode
		add := func(key, p string, child json.RawMessage) {
			if budget <= 0 {
				return
			}
			budget--
			n := srcviews.TreeNode{Key: key, Path: p}
			child = bytes.TrimSpace(child)
			if len(child) > 0 && (child[0] == '{' || child[0] == '[') {
				n.Children = walk(child, p, depth+1)
			} else {
				n.Value = clip.Runes(string(child), 80, "…")
			}
			out = append(out, n)
		}
		switch v[0] {
		case '{':
			dec := json.NewDecoder(bytes.NewReader(v))
			if _, err := dec.Token(); err != nil {
				return nil
			}
			for dec.More() {
				t, err := dec.Token()
				key, ok := t.(string)
				if err != nil || !ok {
					return out
				}
				var child json.RawMessage
				if dec.Decode(&child) != nil {
					return out
				}
				add(key, kinds.ChildPath(path, key), child)
			}
		case '[':
			var items []json.RawMessage
			if json.Unmarshal(v, &items) != nil {
				return nil
			}
			for i, it := range items {
				add("["+strconv.Itoa(i)+"]", kinds.IndexPath(path, i), it)
			}
		}
		return out
	}
	return walk(raw, "$", 0)
}

const (
	maxTreeNodes = 300
	maxTreeDepth = 8
)

// wouldMap tries the saved mapping on the source's latest stored
// deliveries and counts the failed ones it now maps.
func (s *Server) wouldMap(r *http.Request, tenantID, sourceID string) (srcviews.WouldMap, error) {
	items, err := s.DeliveryOps.Preview(r.Context(), tenantID, sourceID, nil, wouldMapTried)
	if apperr.Is(err, apperr.Invalid) {
		return srcviews.WouldMap{Known: true}, nil // the saved config itself is broken: nothing maps
	}
	if err != nil {
		return srcviews.WouldMap{}, err
	}
	w := srcviews.WouldMap{Known: true}
	for _, it := range items {
		if it.State == webhooks.StateFailed {
			w.Of++
			if it.Error == nil {
				w.N++
			}
		}
	}
	return w, nil
}

// wouldMapTried bounds the deliveries the saved mapping is tried on for
// the "would now map" count (Preview reads the newest this many).
const wouldMapTried = 200

// reprocessedBanner is the confirmation after "Reprocess": the leads made
// from this source since the reprocess (?reprocessed=N&since=unix ms).
func (s *Server) reprocessedBanner(r *http.Request, tenantID, sourceID string) (*srcviews.Reprocessed, error) {
	q := r.URL.Query()
	n, err1 := strconv.Atoi(q.Get("reprocessed"))
	ms, err2 := strconv.ParseInt(q.Get("since"), 10, 64)
	if err1 != nil || err2 != nil || n < 0 {
		return nil, nil
	}
	ds, err := s.Deliveries.ProcessedSince(r.Context(), tenantID, sourceID, time.UnixMilli(ms), 50)
	if err != nil {
		return nil, err
	}
	b := &srcviews.Reprocessed{Queued: n}
	seen := map[string]bool{}
	for _, d := range ds {
		if d.LeadID != nil && !seen[*d.LeadID] {
			seen[*d.LeadID] = true
			b.Leads = append(b.Leads, srcviews.LeadLink{LeadID: *d.LeadID, SenderID: d.DeliveryID})
		}
	}
	b.Pending = len(ds) < n
	return b, nil
}
