package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/leads"
	"leadpipe/views/components"
	"leadpipe/views/settings"
)

// assignmentUIRoutes are the admin pages of the assignment rules
// (docs/ARCHITECTURE.md, "Assignment and first response"). The API replaces the whole list at once, so every
// form names a rule by its position and carries a fingerprint of the list
// it was rendered from: a form from a stale page is refused instead of
// changing the wrong rule.
func (s *Server) assignmentUIRoutes(r chi.Router) {
	r.Get("/settings/assignment", viewPage(s, s.assignmentView, settings.Assignment))
	r.Post("/settings/assignment", s.uiSaveFirstResponse)
	r.Get("/settings/assignment/rules/new", s.uiNewRule)
	r.Post("/settings/assignment/rules", s.uiCreateRule)
	r.Get("/settings/assignment/rules/{n}", s.uiEditRule)
	r.Post("/settings/assignment/rules/{n}", s.uiSaveRule)
	r.Post("/settings/assignment/rules/{n}/delete", s.uiDeleteRule)
	r.Post("/settings/assignment/rules/{n}/move", s.uiMoveRule)
}

// assignmentVersion fingerprints the rules and settings as stored. The
// service offers no version, so this check and the save are two steps: it
// catches a page left open while someone else saved, not two saves in
// the same instant (the later one wins whole, never half).
func assignmentVersion(a leads.Assignment) string {
	b, _ := json.Marshal(a)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

const staleRules = "Someone changed the assignment rules since you opened this page. Nothing was saved; these are the current rules."

// ruleIndex reads {n} (1-based in URLs is friendlier, but the forms use
// the list's own 0-based index).
func ruleIndex(r *http.Request) (int, bool) {
	n, err := strconv.Atoi(chi.URLParam(r, "n"))
	return n, err == nil && n >= 0 && n < 10_000
}

// assignmentView is the list of the tenant's rules as they are now.
func (s *Server) assignmentView(w http.ResponseWriter, r *http.Request) (settings.AssignmentView, error) {
	tenantID := sessionFrom(r.Context()).Tenant.ID
	a, err := s.Leads.Assignment(r.Context(), tenantID)
	if err != nil {
		return settings.AssignmentView{}, err
	}
	dir, err := s.loadDirectory(r.Context(), tenantID)
	if err != nil {
		return settings.AssignmentView{}, err
	}
	v := settings.AssignmentView{Page: s.page(w, r, "Assignment rules", "assignment"), Version: assignmentVersion(a),
		Minutes: strconv.Itoa(a.FirstResponseMinutes), Errors: map[string]string{}}
	for i, rule := range a.Rules {
		v.Rules = append(v.Rules, ruleRow(i, rule, dir))
	}
	return v, nil
}

// ruleRow puts a rule in words for the list.
func ruleRow(i int, rule leads.AssignmentRule, dir directory) settings.RuleRow {
	row := settings.RuleRow{Index: i, Name: rule.Name, When: whenText(rule.When, dir), Strategy: rule.Strategy}
	people := rule.Members
	if rule.Strategy == leads.StrategyOwner && rule.OwnerID != nil {
		people = []string{*rule.OwnerID}
	}
	now := time.Now()
	for _, id := range people {
		m := dir.member(id, now)
		if c, ok := rule.Caps[id]; ok {
			m.Cap = strconv.Itoa(c)
		}
		row.Members = append(row.Members, m)
	}
	if e := rule.Escalate; e != nil {
		to := "the next member"
		if e.To != leads.EscalateNextMember {
			to = dir.member(e.To, now).Name
		}
		row.Escalate = "After " + strconv.Itoa(e.AfterMinutes) + " minutes without a first reply past due, give it to " + to
	}
	return row
}

func (d directory) member(id string, now time.Time) settings.RuleMember {
	for _, u := range d.users {
		if u.ID == id {
			m := settings.RuleMember{Name: u.Name, Inactive: u.DisabledAt != nil}
			if u.Away(now) {
				m.AwayUntil = u.AwayUntil
			}
			return m
		}
	}
	return settings.RuleMember{Name: "a removed user", Inactive: true}
}

func whenText(c leads.RuleCondition, dir directory) string {
	switch {
	case c.SourceID != nil && c.Field != nil:
		return sourceText(*c.SourceID, dir) + " and " + fieldText(c)
	case c.SourceID != nil:
		return sourceText(*c.SourceID, dir)
	case c.Field != nil:
		return fieldText(c)
	}
	return "Every new lead"
}

func sourceText(id string, dir directory) string {
	if id == leads.SourceManual {
		return "Added by hand"
	}
	if n, ok := dir.sources[id]; ok {
		return "Source is " + n
	}
	return "Source is a deleted source"
}

func fieldText(c leads.RuleCondition) string {
	return *c.Field + " equals “" + deref(c.Equals) + "”"
}

// uiSaveFirstResponse is POST /settings/assignment: the first-response time.
func (s *Server) uiSaveFirstResponse(w http.ResponseWriter, r *http.Request) {
	a, ok := s.freshAssignment(w, r)
	if !ok {
		return
	}
	typed := strings.TrimSpace(r.PostFormValue("first_response_minutes"))
	n, err := strconv.Atoi(typed)
	if err == nil {
		a.FirstResponseMinutes = n
		if n < 1 {
			err = apperr.InvalidFields(map[string]string{"first_response_minutes": "must be between 1 and 10080"})
		} else {
			_, err = s.Leads.PutAssignment(r.Context(), sessionFrom(r.Context()).Tenant.ID, a)
		}
	} else {
		err = apperr.InvalidFields(map[string]string{"first_response_minutes": "must be a whole number of minutes"})
	}
	switch {
	case apperr.Is(err, apperr.Invalid):
		v, verr := s.assignmentView(nil, r)
		if verr != nil {
			s.uiError(w, r, verr)
			return
		}
		v.Minutes = typed
		v.Errors = fieldErrors(err)
		if v.Errors["first_response_minutes"] == "" {
			v.Page.FlashError = rulesProblem(err)
		}
		s.render(w, r, http.StatusUnprocessableEntity, settings.Assignment(v))
	case err != nil:
		s.uiError(w, r, err)
	default:
		s.setFlash(w, r, "First-response time saved: "+strconv.Itoa(n)+" minutes for leads assigned from now on.")
		seeOther(w, r, "/settings/assignment")
	}
}

// freshAssignment parses the form and reads the rules; a form rendered
// from other rules than these is sent back to the list with a notice.
func (s *Server) freshAssignment(w http.ResponseWriter, r *http.Request) (leads.Assignment, bool) {
	if err := parseForm(w, r); err != nil {
		s.uiError(w, r, err)
		return leads.Assignment{}, false
	}
	a, err := s.Leads.Assignment(r.Context(), sessionFrom(r.Context()).Tenant.ID)
	if err != nil {
		s.uiError(w, r, err)
		return leads.Assignment{}, false
	}
	if r.PostFormValue("version") != assignmentVersion(a) {
		s.setFlashError(w, r, staleRules)
		seeOther(w, r, "/settings/assignment")
		return leads.Assignment{}, false
	}
	return a, true
}

// freshRule is freshAssignment and the rule {n} of it (404 when there is
// no such rule).
func (s *Server) freshRule(w http.ResponseWriter, r *http.Request) (leads.Assignment, int, bool) {
	a, ok := s.freshAssignment(w, r)
	if !ok {
		return a, 0, false
	}
	i, ok := ruleIndex(r)
	if !ok || i >= len(a.Rules) {
		s.uiNotFound(w, r)
		return a, 0, false
	}
	return a, i, true
}

// uiMoveRule is POST /settings/assignment/rules/{n}/move (dir up|down).
func (s *Server) uiMoveRule(w http.ResponseWriter, r *http.Request) {
	a, i, ok := s.freshRule(w, r)
	if !ok {
		return
	}
	j := i - 1
	if r.PostFormValue("dir") == "down" {
		j = i + 1
	}
	if j < 0 || j >= len(a.Rules) {
		seeOther(w, r, "/settings/assignment")
		return
	}
	a.Rules[i], a.Rules[j] = a.Rules[j], a.Rules[i]
	s.putRules(w, r, a, "Moved “"+a.Rules[j].Name+"” to position "+strconv.Itoa(j+1)+".")
}

// uiDeleteRule is POST /settings/assignment/rules/{n}/delete.
func (s *Server) uiDeleteRule(w http.ResponseWriter, r *http.Request) {
	a, i, ok := s.freshRule(w, r)
	if !ok {
		return
	}
	name := a.Rules[i].Name
	a.Rules = append(a.Rules[:i:i], a.Rules[i+1:]...)
	s.putRules(w, r, a, "Deleted the rule “"+name+"”.")
}

// putRules saves a list change made on the list page (move, delete).
// Such a change can still be refused, e.g. when another rule names a user
// who has been disabled since: the list says which rule to fix.
func (s *Server) putRules(w http.ResponseWriter, r *http.Request, a leads.Assignment, done string) {
	_, err := s.Leads.PutAssignment(r.Context(), sessionFrom(r.Context()).Tenant.ID, a)
	switch {
	case apperr.Is(err, apperr.Invalid):
		s.setFlashError(w, r, "Not saved: "+rulesProblem(err))
	case err != nil:
		s.uiError(w, r, err)
		return
	default:
		s.setFlash(w, r, done)
	}
	seeOther(w, r, "/settings/assignment")
}

// rulesProblem words the service's field errors for the whole list:
// "rule 2 members: must be active users …".
func rulesProblem(err error) string {
	var e *apperr.Error
	if !errors.As(err, &e) || len(e.Fields) == 0 {
		return "the rules are not valid."
	}
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, ruleFieldLabel(k)+": "+e.Fields[k])
	}
	return strings.Join(parts, "; ") + "."
}

// ruleFieldLabel turns "rules[1].members" into "rule 2, members".
func ruleFieldLabel(k string) string {
	if !strings.HasPrefix(k, "rules[") {
		return strings.ReplaceAll(k, "_", " ")
	}
	end := strings.Index(k, "]")
	if end < 0 {
		return k
	}
	n, err := strconv.Atoi(k[len("rules["):end])
	if err != nil {
		return k
	}
	return "rule " + strconv.Itoa(n+1) + ", " + strings.TrimPrefix(k[end+1:], ".")
}

// ruleForm is the form's view model with the tenant's choices.
func (s *Server) ruleForm(w http.ResponseWriter, r *http.Request, f settings.RuleForm) (settings.RuleForm, error) {
	dir, err := s.loadDirectory(r.Context(), sessionFrom(r.Context()).Tenant.ID)
	if err != nil {
		return f, err
	}
	title := "Add an assignment rule"
	if f.Index >= 0 {
		title = "Edit assignment rule"
	}
	f.Page = s.page(w, r, title, "assignment")
	f.Users = nil
	for _, u := range dir.users {
		if u.DisabledAt == nil {
			label := u.Name
			if label == "" {
				label = u.Email
			}
			f.Users = append(f.Users, components.Option{Value: u.ID, Label: label})
		}
	}
	f.Sources = append(append([]components.Option(nil), dir.srcOpts...), components.Option{Value: leads.SourceManual, Label: "Added by hand"})
	if f.Errors == nil {
		f.Errors = map[string]string{}
	}
	if f.Members == nil {
		f.Members = map[string]bool{}
	}
	return f, nil
}

func (s *Server) renderRuleForm(w http.ResponseWriter, r *http.Request, status int, f settings.RuleForm) {
	var ww http.ResponseWriter
	if status == http.StatusOK {
		ww = w // only a fresh page takes the flash
	}
	f, err := s.ruleForm(ww, r, f)
	s.renderResult(w, r, status, settings.RuleEdit(f), err)
}

// uiNewRule is GET /settings/assignment/rules/new.
func (s *Server) uiNewRule(w http.ResponseWriter, r *http.Request) {
	a, err := s.Leads.Assignment(r.Context(), sessionFrom(r.Context()).Tenant.ID)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	s.renderRuleForm(w, r, http.StatusOK, settings.RuleForm{Index: -1, Version: assignmentVersion(a),
		When: settings.WhenAny, Strategy: settings.StrategyRoundRobin})
}

// uiEditRule is GET /settings/assignment/rules/{n}.
func (s *Server) uiEditRule(w http.ResponseWriter, r *http.Request) {
	a, err := s.Leads.Assignment(r.Context(), sessionFrom(r.Context()).Tenant.ID)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	i, ok := ruleIndex(r)
	if !ok || i >= len(a.Rules) {
		s.uiNotFound(w, r)
		return
	}
	f := formOfRule(a.Rules[i])
	f.Index, f.Version = i, assignmentVersion(a)
	s.renderRuleForm(w, r, http.StatusOK, f)
}

func formOfRule(rule leads.AssignmentRule) settings.RuleForm {
	f := settings.RuleForm{Name: rule.Name, When: settings.WhenAny, Strategy: rule.Strategy, Members: map[string]bool{}}
	// The form offers one condition; a rule made through the API with
	// both keeps the source and shows the field too (both are saved).
	if c := rule.When; c.Field != nil {
		f.When, f.Field, f.Equals = settings.WhenField, *c.Field, deref(c.Equals)
	}
	if c := rule.When; c.SourceID != nil {
		f.When, f.SourceID = settings.WhenSource, *c.SourceID
	}
	for _, m := range rule.Members {
		f.Members[m] = true
	}
	f.OwnerID = deref(rule.OwnerID)
	f.Caps = map[string]string{}
	for u, c := range rule.Caps {
		f.Caps[u] = strconv.Itoa(c)
	}
	if e := rule.Escalate; e != nil {
		f.EscalateAfter, f.EscalateTo = strconv.Itoa(e.AfterMinutes), e.To
	}
	return f
}

// readRuleForm reads the posted form into the view model and the rule.
func readRuleForm(r *http.Request, index int) (settings.RuleForm, leads.AssignmentRule) {
	f := settings.RuleForm{Index: index, Version: r.PostFormValue("version"), Name: strings.TrimSpace(r.PostFormValue("name")),
		When: r.PostFormValue("when"), SourceID: r.PostFormValue("source_id"), Field: strings.TrimSpace(r.PostFormValue("field")),
		Equals: r.PostFormValue("equals"), Strategy: r.PostFormValue("strategy"), OwnerID: r.PostFormValue("owner_id"),
		Members: map[string]bool{}, Errors: map[string]string{}, Caps: map[string]string{},
		EscalateAfter: strings.TrimSpace(r.PostFormValue("escalate_after")), EscalateTo: r.PostFormValue("escalate_to")}
	rule := leads.AssignmentRule{Name: f.Name, Strategy: f.Strategy}
	if f.EscalateAfter != "" {
		n, err := strconv.Atoi(f.EscalateAfter)
		if err != nil {
			f.Errors["escalate_after"] = "Enter a whole number of minutes, or leave it empty."
		}
		rule.Escalate = &leads.Escalation{AfterMinutes: n, To: f.EscalateTo}
	}
	switch f.When {
	case settings.WhenSource:
		if f.SourceID == "" {
			f.Errors["source_id"] = "Choose a source."
		}
		rule.When.SourceID = &f.SourceID
	case settings.WhenField:
		if f.Field == "" {
			f.Errors["field"] = "Name a field, such as company."
		}
		rule.When.Field, rule.When.Equals = &f.Field, &f.Equals
	default:
		f.When = settings.WhenAny
	}
	switch f.Strategy {
	case settings.StrategyRoundRobin:
		for _, m := range r.PostForm["members"] {
			if !f.Members[m] {
				f.Members[m] = true
				rule.Members = append(rule.Members, m)
			}
			v := strings.TrimSpace(r.PostFormValue("cap-" + m))
			if v == "" {
				continue
			}
			f.Caps[m] = v
			c, err := strconv.Atoi(v)
			if err != nil || c < 0 {
				f.Errors["caps"] = "A daily cap is a whole number (0 or more), or empty for no cap."
				continue
			}
			if rule.Caps == nil {
				rule.Caps = map[string]int{}
			}
			rule.Caps[m] = c
		}
		if len(rule.Members) == 0 {
			f.Errors["members"] = "Tick at least one person."
		}
	case settings.StrategyOwner:
		if f.OwnerID == "" {
			f.Errors["owner_id"] = "Choose who gets the leads."
		}
		rule.OwnerID = &f.OwnerID
		// Keep the ticks as typed, in case the admin switches back.
		for _, m := range r.PostForm["members"] {
			f.Members[m] = true
		}
	default:
		f.Errors["strategy"] = "Choose round robin or one person."
	}
	if f.Name == "" {
		f.Errors["name"] = "Give the rule a name, such as Everyone."
	}
	return f, rule
}

// uiCreateRule is POST /settings/assignment/rules: adds a rule at the end.
func (s *Server) uiCreateRule(w http.ResponseWriter, r *http.Request) {
	s.saveRule(w, r, -1)
}

// uiSaveRule is POST /settings/assignment/rules/{n}.
func (s *Server) uiSaveRule(w http.ResponseWriter, r *http.Request) {
	i, ok := ruleIndex(r)
	if !ok {
		s.uiNotFound(w, r)
		return
	}
	s.saveRule(w, r, i)
}

func (s *Server) saveRule(w http.ResponseWriter, r *http.Request, index int) {
	if err := parseForm(w, r); err != nil {
		s.uiError(w, r, err)
		return
	}
	ctx := r.Context()
	tenantID := sessionFrom(ctx).Tenant.ID
	f, rule := readRuleForm(r, index)
	a, err := s.Leads.Assignment(ctx, tenantID)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	if cur := assignmentVersion(a); f.Version != cur {
		// Keep what was typed; the next save applies to the rules as they
		// are now (a vanished rule is added at the end instead).
		f.Conflict, f.Version = true, cur
		if index >= len(a.Rules) {
			f.Index = -1
		} else if index >= 0 {
			dir, err := s.loadDirectory(ctx, tenantID)
			if err != nil {
				s.uiError(w, r, err)
				return
			}
			row := ruleRow(index, a.Rules[index], dir)
			f.Current = row.Name + " — " + row.When
		}
		s.renderRuleForm(w, r, http.StatusConflict, f)
		return
	}
	if index >= len(a.Rules) {
		s.uiNotFound(w, r)
		return
	}
	if len(f.Errors) > 0 {
		s.renderRuleForm(w, r, http.StatusUnprocessableEntity, f)
		return
	}
	pos := index
	if index < 0 {
		pos = len(a.Rules)
		a.Rules = append(a.Rules, rule)
	} else {
		a.Rules[index] = rule
	}
	_, err = s.Leads.PutAssignment(ctx, tenantID, a)
	switch {
	case apperr.Is(err, apperr.Invalid):
		f.Errors, f.Problem = ruleFormErrors(err, pos)
		s.renderRuleForm(w, r, http.StatusUnprocessableEntity, f)
	case err != nil:
		s.uiError(w, r, err)
	default:
		if index < 0 {
			s.setFlash(w, r, "Added the rule “"+rule.Name+"”. New leads are tried against it from now on.")
		} else {
			s.setFlash(w, r, "Saved the rule “"+rule.Name+"”.")
		}
		seeOther(w, r, "/settings/assignment")
	}
}

// ruleFormErrors splits the service's field errors into this rule's
// (by form field) and the others' (one sentence).
func ruleFormErrors(err error, pos int) (map[string]string, string) {
	mine := map[string]string{}
	var e *apperr.Error
	if !errors.As(err, &e) {
		return mine, "The rules are not valid."
	}
	prefix := "rules[" + strconv.Itoa(pos) + "]."
	others := map[string]string{}
	for k, v := range e.Fields {
		if f, ok := strings.CutPrefix(k, prefix); ok {
			switch {
			case f == "when":
				mine["when"] = sentence(f, v)
			case strings.HasPrefix(f, "when."):
				mine[strings.TrimPrefix(f, "when.")] = sentence(f, v)
			case f == "escalate.after_minutes":
				mine["escalate_after"] = sentence(f, v)
			case f == "escalate.to":
				mine["escalate_to"] = sentence(f, v)
			default:
				mine[f] = sentence(f, v)
			}
			continue
		}
		others[k] = v
	}
	if len(others) == 0 {
		return mine, ""
	}
	return mine, "Another rule needs fixing first: " + rulesProblem(apperr.InvalidFields(others))
}

// assignedBy finds why a lead has its owner: the newest assignment by a
// rule, if the owner is still the one it chose.
func assignedBy(tl []leads.TimelineEntry, ownerID string) (rule string, ok bool) {
	for _, e := range tl {
		switch e.Kind {
		case leads.EventOwnerChanged:
			return "", false // a person chose the owner since
		case leads.EventAssigned:
			var d struct {
				OwnerID  string `json:"owner_id"`
				RuleName string `json:"rule_name"`
			}
			if json.Unmarshal(e.Detail, &d) != nil || d.OwnerID != ownerID {
				return "", false
			}
			return d.RuleName, true
		}
	}
	return "", false
}

// mineFirst orders a first-response view (Overdue, Due soon) with the
// reader's own leads first: their pages come first (mine_cursor pages
// through them), then everyone else's (cursor), which leave theirs out.
// A view narrowed to one owner is left as is. It returns the rows and how
// many of them are the reader's, and the next page's cursor and the
// parameter that carries it.
func (s *Server) mineFirst(ctx context.Context, tenantID, me string, f leads.Filter, others leads.Page, mineCursor string) ([]leads.Lead, int, string, string, error) {
	if f.OwnerID != "" {
		return others.Items, 0, others.NextCursor, "cursor", nil
	}
	notMine := func(ls []leads.Lead, out []leads.Lead) []leads.Lead {
		for _, l := range ls {
			if l.OwnerID == nil || *l.OwnerID != me {
				out = append(out, l)
			}
		}
		return out
	}
	if f.Cursor != "" {
		return notMine(others.Items, nil), 0, others.NextCursor, "cursor", nil
	}
	mf := f
	mf.OwnerID, mf.Cursor = me, mineCursor
	mine, err := s.Leads.List(ctx, tenantID, mf)
	if apperr.Is(err, apperr.Invalid) && mineCursor != "" { // a mangled link: from the start
		mf.Cursor = ""
		mine, err = s.Leads.List(ctx, tenantID, mf)
	}
	if err != nil {
		return nil, 0, "", "", err
	}
	if mine.NextCursor != "" {
		return mine.Items, len(mine.Items), mine.NextCursor, "mine_cursor", nil
	}
	out := notMine(others.Items, append(make([]leads.Lead, 0, len(mine.Items)+len(others.Items)), mine.Items...))
	return out, len(mine.Items), others.NextCursor, "cursor", nil
}
