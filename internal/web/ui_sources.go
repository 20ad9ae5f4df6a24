package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/rejections"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks"
	"leadpipe/internal/webhooks/kinds"
	srcviews "leadpipe/views/sources"
)

func (s *Server) sourcesView(w http.ResponseWriter, r *http.Request, form srcviews.Form) (srcviews.ListView, error) {
	sess := sessionFrom(r.Context())
	list, err := s.Sources.List(r.Context(), sess.Tenant.ID)
	if err != nil {
		return srcviews.ListView{}, err
	}
	last, err := s.Deliveries.LastBySource(r.Context(), sess.Tenant.ID)
	if err != nil {
		return srcviews.ListView{}, err
	}
	v := srcviews.ListView{Page: s.page(w, r, "Sources", "sources"), Form: form, Now: time.Now()}
	health, top := s.sourceHealth(r.Context(), sess.Tenant.ID, v.Now)
	v.SparkTop = top
	for _, src := range list {
		row := srcviews.Row{ID: src.ID, Name: src.Name, Slug: src.Slug, Kind: src.Kind,
			WebhookURL: s.Sources.WebhookURL(sess.Tenant.Slug, src.Slug), LastDelivery: last[src.ID]}
		row.Health = health[src.ID]
		v.Rows = append(v.Rows, row)
	}
	v.Form.Key = keepFormKey(v.Form.Key)
	return v, nil
}

// uiCreateSource answers with the new source's page (no redirect): its
// signing secret is shown on this answer only.
func (s *Server) uiCreateSource(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	f := srcviews.Form{Name: r.PostFormValue("name"), Slug: strings.TrimSpace(r.PostFormValue("slug")), Kind: r.PostFormValue("kind"),
		Secret: r.PostFormValue("secret"), VerifyToken: r.PostFormValue("verify_token"),
		Config: strings.TrimSpace(r.PostFormValue("config")), Key: r.PostFormValue("key")}
	in := sources.CreateInput{Name: f.Name, Slug: f.Slug, Kind: f.Kind, Secret: f.Secret, VerifyToken: f.VerifyToken}
	if f.Config != "" {
		if !json.Valid([]byte(f.Config)) {
			f.Errors = map[string]string{"config": "Must be valid JSON, e.g. {\"signature_header\":\"X-Signature\"}."}
			s.rerenderSources(w, r, f)
			return
		}
		in.Config = json.RawMessage(f.Config)
	}
	var secret string
	loc, err := s.uiOnce(r.Context(), sess.Tenant.ID, f.Key, "sources", func(k *idempotency.Key) (string, error) {
		src, sec, err := s.Sources.CreateOnce(r.Context(), sess.Tenant.ID, in, idempotency.Once[sources.Source]{Key: k,
			Respond: func(src sources.Source) (idempotency.Response, error) {
				return idempotency.SeeOther("/sources/" + src.ID), nil
			}})
		secret = sec
		return "/sources/" + src.ID, err
	})
	switch {
	case err == nil:
	case apperr.Is(err, apperr.Invalid):
		f.Errors = fieldErrors(err)
		s.rerenderSources(w, r, f)
		return
	case apperr.Is(err, apperr.Conflict):
		f.Errors = map[string]string{"slug": "Another source already uses this slug; pick another."}
		s.rerenderSources(w, r, f)
		return
	default:
		s.uiError(w, r, err)
		return
	}
	id := strings.TrimPrefix(loc, "/sources/")
	why := "created"
	if secret == "" {
		// The same form submitted twice (a double click): the browser shows
		// only the last answer, so show the secret the first one made.
		secrets, err := s.Sources.Secrets(r.Context(), sess.Tenant.ID, id)
		if err != nil {
			s.uiError(w, r, err)
			return
		}
		if len(secrets) > 0 {
			secret, why = secrets[0], "replayed"
		}
	}
	s.renderSource(w, r, http.StatusOK, id, secret, why, "Source added. Paste the webhook URL and the secret into the sending tool.")
}

func (s *Server) rerenderSources(w http.ResponseWriter, r *http.Request, f srcviews.Form) {
	v, err := s.sourcesView(nil, r, f)
	s.renderResult(w, r, http.StatusUnprocessableEntity, srcviews.List(v), err)
}

func (s *Server) uiSource(w http.ResponseWriter, r *http.Request) {
	s.renderSource(w, r, http.StatusOK, chi.URLParam(r, "id"), "", "", "")
}

func (s *Server) uiRotateSecret(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	id, grace := chi.URLParam(r, "id"), postedGrace(r)
	if _, err := s.Sources.Get(r.Context(), sess.Tenant.ID, id); err != nil {
		s.uiError(w, r, err)
		return
	}
	_, secret, err := s.Sources.Rotate(r.Context(), sess.Tenant.ID, id, sources.RotateInput{GraceSeconds: &grace})
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	flash := "Secret rotated. The old secret was revoked at once."
	if grace > 0 {
		flash = "Secret rotated. The old secret keeps working for " + graceText(grace) + "."
	}
	s.renderSource(w, r, http.StatusOK, id, secret, "rotated", flash)
}

// postedGrace is how many seconds a rotated secret keeps working: the
// form's grace_seconds, a day when it sent none.
func postedGrace(r *http.Request) int {
	grace, err := strconv.Atoi(r.PostFormValue("grace_seconds"))
	if err != nil {
		return 86400
	}
	return grace
}

func graceText(sec int) string {
	switch {
	case sec%86400 == 0:
		if sec == 86400 {
			return "24 hours"
		}
		return strconv.Itoa(sec/86400) + " days"
	case sec%3600 == 0:
		if sec == 3600 {
			return "1 hour"
		}
		return strconv.Itoa(sec/3600) + " hours"
	}
	return strconv.Itoa(sec) + " seconds"
}

// renderSource draws a source's page; answers to POSTs pass the secret to
// show once and a notice.
func (s *Server) renderSource(w http.ResponseWriter, r *http.Request, status int, id, secret, why, flash string) {
	s.renderSourceWith(w, r, status, id, secret, why, flash, nil)
}

// renderSourceWith is renderSource with the mapping editor's state (nil:
// the saved mapping, no preview).
func (s *Server) renderSourceWith(w http.ResponseWriter, r *http.Request, status int, id, secret, why, flash string, mapping *srcviews.Mapping) {
	s.renderSourceForms(w, r, status, id, secret, why, flash, mapping, nil)
}

// renderSourceForms is renderSourceWith with the pull settings form as
// submitted (nil: the saved settings).
func (s *Server) renderSourceForms(w http.ResponseWriter, r *http.Request, status int, id, secret, why, flash string, mapping *srcviews.Mapping, pull *srcviews.PullForm) {
	sess := sessionFrom(r.Context())
	ctx := r.Context()
	src, err := s.Sources.Get(ctx, sess.Tenant.ID, id)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	secrets, err := s.Sources.Secrets(ctx, sess.Tenant.ID, id)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	// Ten recent deliveries, filtered: the page leads with what is wrong.
	filter := r.URL.Query().Get("deliveries")
	if filter != webhooks.FilterDuplicates && filter != webhooks.FilterFailing {
		filter = webhooks.FilterAll
	}
	ds, err := s.Deliveries.RecentFiltered(ctx, sess.Tenant.ID, id, filter, recentDeliveriesShown)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	dls, err := s.Deliveries.DeadLetters(ctx, sess.Tenant.ID, id, maxDeadLettersShown)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	v := srcviews.DetailView{Page: s.page(w, r, src.Name, "sources"), NewSecret: secret, SecretWhy: why, Now: time.Now(),
		Source: srcviews.Source{ID: src.ID, Name: src.Name, Slug: src.Slug, Kind: src.Kind,
			WebhookURL: s.Sources.WebhookURL(sess.Tenant.Slug, src.Slug), Config: prettyJSON(src.Config),
			HasVerifyToken: len(src.VerifyTokenEnc) > 0, LiveSecrets: len(secrets), CreatedAt: src.CreatedAt}}
	if src.Kind == kinds.Token && secret != "" {
		v.Source.SecretWebhookURL = v.Source.WebhookURL + "/" + kinds.SecretURLToken(secret)
	}
	if flash != "" {
		v.Page.Flash = flash
	}
	v.DeliveryFilter = filter
	v.OpenAlerts = s.sourceOpenAlerts(ctx, sess.Tenant.ID, src.ID)
	if v.Reconcile, err = s.reconcileView(r, src, pull); err != nil {
		s.uiError(w, r, err)
		return
	}
	for _, d := range ds {
		row := srcviews.Delivery{ID: d.ID, DeliveryID: d.DeliveryID, Origin: d.Origin, ReceivedAt: d.ReceivedAt,
			Duplicates: d.DupCount, Processed: d.ProcessedAt != nil && d.LastError == nil, Size: d.PayloadBytes,
			FirstDuplicateAt: deref(d.DupFirstAt), LastDuplicateAt: deref(d.DupLastAt), LeadID: deref(d.LeadID),
			Error: deref(d.LastError)}
		v.Deliveries = append(v.Deliveries, row)
	}
	for _, d := range dls {
		v.DeadLetters = append(v.DeadLetters, srcviews.DeadLetter{ID: d.ID, Reason: d.Reason, ReceivedAt: d.ReceivedAt,
			Headers: headerRows(d.Headers), Body: readableBody(d.Body), Size: d.Size, Truncated: d.Size > len(d.Body)})
	}
	if v.Rejections, err = s.rejectionRows(r, sess.Tenant.ID, src.ID); err != nil {
		s.uiError(w, r, err)
		return
	}
	if src.Kind == "generic" {
		if mapping == nil {
			var c kinds.GenericConfig
			_ = json.Unmarshal(src.Config, &c)
			mapping = mappingFromConfig(c)
		}
		v.Mapping = mapping
	}
	if v.FailedCount, err = s.DeliveryOps.CountDeliveries(ctx, sess.Tenant.ID, id, webhooks.StateFailed); err != nil {
		s.uiError(w, r, err)
		return
	}
	if v.FailedCount > 0 {
		page, err := s.DeliveryOps.ListDeliveries(ctx, sess.Tenant.ID, id, webhooks.StateFailed, "", 20)
		if err != nil {
			s.uiError(w, r, err)
			return
		}
		for _, d := range page.Items {
			body := d.Raw
			if len(body) > 64<<10 {
				body = body[:64<<10]
			}
			f := srcviews.Failed{ID: d.ID, Attempts: d.Attempts, ReceivedAt: d.ReceivedAt, Body: readableBody(body)}
			if d.LastError != nil {
				f.Error = *d.LastError
			}
			v.Failed = append(v.Failed, f)
			if len(v.Failed) == 1 && v.Mapping != nil {
				s.guideMapping(v.Mapping, d)
			}
		}
		if v.Mapping != nil {
			if v.WouldMap, err = s.wouldMap(r, sess.Tenant.ID, id); err != nil {
				s.uiError(w, r, err)
				return
			}
		}
	}
	if v.Reprocessed, err = s.reprocessedBanner(r, sess.Tenant.ID, id); err != nil {
		s.uiError(w, r, err)
		return
	}
	if secret != "" {
		// The secret is on this page: keep it out of every cache and history.
		w.Header().Set("Cache-Control", "no-store")
	}
	s.render(w, r, status, srcviews.Detail(v))
}

// headerRows turns stored headers ({"Name":"value"}) into sorted rows for
// a table, signatures cut and credentials masked as on the rejected
// requests (rejections.SafeHeaders).
func headerRows(raw []byte) []srcviews.Header {
	var m map[string]string
	if json.Unmarshal(raw, &m) != nil || len(m) == 0 {
		return nil
	}
	h := http.Header{}
	for k, v := range m {
		h[k] = []string{v}
	}
	safe := rejections.SafeHeaders(h, nil)
	out := make([]srcviews.Header, 0, len(safe))
	for k, v := range safe {
		out = append(out, srcviews.Header{Name: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// prettyJSON indents JSON for reading; anything else is returned as text.
func prettyJSON(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" || string(b) == "{}" {
		return ""
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return readableBody(b)
	}
	return out.String()
}

// readableBody shows a raw body as text: pretty when it is JSON, invalid
// UTF-8 replaced (templ escapes the rest).
func readableBody(b []byte) string {
	if json.Valid(b) {
		var out bytes.Buffer
		if json.Indent(&out, b, "", "  ") == nil {
			return out.String()
		}
	}
	if !utf8.Valid(b) {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	return string(b)
}

func (s *Server) reconcileView(r *http.Request, src sources.Source, pull *srcviews.PullForm) (srcviews.Reconcile, error) {
	v := srcviews.Reconcile{Available: sources.ReconcileKinds[src.Kind], Enabled: src.ReconcileEnabled()}
	if pull != nil {
		v.Form = *pull
	} else {
		v.Form = pullFormOf(src)
	}
	if !v.Available || !v.Enabled {
		return v, nil
	}
	v.BaseURL, v.Interval = strValue(src.ReconcileBaseURL), durWords(time.Duration(src.ReconcileIntervalS)*time.Second)
	page, err := s.Reconcile.ListRuns(r.Context(), src.TenantID, src.ID, 10, "")
	if err != nil {
		return v, err
	}
	for _, run := range page.Items {
		row := srcviews.Run{State: run.State, Trigger: run.Trigger, StartedAt: run.StartedAt, Pages: run.Pages,
			Records: run.Records, New: run.New, Known: run.Known, Errs: run.Errors, LastError: strValue(run.LastError)}
		if run.FinishedAt != nil {
			row.FinishedAt = *run.FinishedAt
		}
		v.Runs = append(v.Runs, row)
	}
	return v, nil
}

func strValue(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// uiReconcileNow starts a reconcile run ("Reconcile now"); a second click
// while one runs joins it.
func (s *Server) uiReconcileNow(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	id := chi.URLParam(r, "id")
	if _, err := s.Reconcile.Trigger(r.Context(), sess.Tenant.ID, id); err != nil {
		if apperr.Is(err, apperr.Invalid) {
			s.setFlash(w, r, "Reconcile is not set up for this source yet.")
			seeOther(w, r, "/sources/"+id+"#reconcile")
			return
		}
		s.uiError(w, r, err)
		return
	}
	s.setFlash(w, r, "Reconcile started. Reload in a moment to see the run.")
	seeOther(w, r, "/sources/"+id+"#reconcile")
}

// pullFormOf fills the pull settings form from the saved source; the
// access token only as "set" or not.
func pullFormOf(src sources.Source) srcviews.PullForm {
	return srcviews.PullForm{Kind: src.Kind, BaseURL: strValue(src.ReconcileBaseURL), FormID: strValue(src.ReconcileFormID),
		ListPath: strValue(src.ReconcileListPath), IntervalMinutes: strconv.Itoa(src.ReconcileIntervalS / 60),
		LookbackMinutes: strconv.Itoa(src.ReconcileLookbackS / 60), HasToken: len(src.ReconcileTokenEnc) > 0}
}

// uiReconcileSettings saves the pull settings form through the same
// sources service as PATCH /api/v1/sources/{id}. A blank token keeps the
// stored one; a refused save re-renders the page (422) with each message
// beside its field and never puts the typed token back into the page.
func (s *Server) uiReconcileSettings(w http.ResponseWriter, r *http.Request) {
	src, ok := s.postedSource(w, r)
	if !ok {
		return
	}
	sess := sessionFrom(r.Context())
	if !sources.ReconcileKinds[src.Kind] {
		s.uiError(w, r, apperr.New(apperr.NotFound, "this source has no pull settings"))
		return
	}
	token := r.PostFormValue("access_token")
	f := srcviews.PullForm{Kind: src.Kind, BaseURL: strings.TrimSpace(r.PostFormValue("base_url")),
		FormID: strings.TrimSpace(r.PostFormValue("form_id")), ListPath: strings.TrimSpace(r.PostFormValue("list_path")),
		IntervalMinutes: strings.TrimSpace(r.PostFormValue("interval_minutes")), LookbackMinutes: strings.TrimSpace(r.PostFormValue("lookback_minutes")),
		HasToken: len(src.ReconcileTokenEnc) > 0, Errors: map[string]string{}}
	in := sources.ReconcileInput{BaseURL: &f.BaseURL}
	switch {
	case token != "":
		in.AccessToken = &token
	case r.PostFormValue("clear_token") != "":
		none := ""
		in.AccessToken = &none
	}
	if src.Kind == "generic" {
		in.ListPath = &f.ListPath
	} else {
		in.FormID = &f.FormID
	}
	minutes := func(field, value string) *int {
		if value == "" {
			return nil // keep what is saved
		}
		m, err := strconv.Atoi(value)
		if err != nil {
			f.Errors[field] = "Enter a whole number of minutes."
			return nil
		}
		sec := m * 60
		return &sec
	}
	in.IntervalSeconds = minutes("interval_minutes", f.IntervalMinutes)
	in.LookbackSeconds = minutes("lookback_minutes", f.LookbackMinutes)
	if len(f.Errors) == 0 {
		_, err := s.Sources.Patch(r.Context(), sess.Tenant.ID, src.ID, sources.PatchInput{Reconcile: &in})
		if apperr.Is(err, apperr.Invalid) {
			addPullErrors(&f, fieldErrors(err))
		} else if err != nil {
			s.uiError(w, r, err)
			return
		}
	}
	if len(f.Errors) > 0 {
		f.TokenTyped = token != ""
		s.renderSourceForms(w, r, http.StatusUnprocessableEntity, src.ID, "", "", "", nil, &f)
		return
	}
	flash := "Pull settings saved."
	if f.BaseURL == "" {
		flash = "Pull settings saved: reconcile is off."
	}
	s.setFlash(w, r, flash)
	seeOther(w, r, "/sources/"+src.ID+"#reconcile")
}

// addPullErrors puts the service's messages (reconcile.<field>) beside
// the form's fields, in the form's units.
func addPullErrors(f *srcviews.PullForm, fields map[string]string) {
	for k, msg := range fields {
		switch k = strings.TrimPrefix(k, "reconcile."); k {
		case "interval_seconds":
			f.Errors["interval_minutes"] = "Between 1 and 10,080 minutes (7 days)."
		case "lookback_seconds":
			f.Errors["lookback_minutes"] = "Between 0 and 43,200 minutes (30 days)."
		case "form_id":
			if strings.Contains(msg, "required") {
				msg = "Enter the form's id: " + srcviews.KindLabel(f.Kind) + " lists leads per form."
			}
			f.Errors[k] = msg
		case "list_path":
			if strings.Contains(msg, "required") {
				msg = "Enter the path of the sender's list endpoint, e.g. /leads."
			}
			f.Errors[k] = msg
		case "base_url", "access_token":
			f.Errors[k] = msg
		default:
			f.Errors["base_url"] = msg
		}
	}
}
