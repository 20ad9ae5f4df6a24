package web

import (
	"context"
	"net/http"
	"time"

	"leadpipe/internal/apperr"
	"leadpipe/internal/leads"
	"leadpipe/views/components"
	leadviews "leadpipe/views/leads"
)

// The board: one column per status, paged per column, drag and drop
// through the lead page's status form.

func (s *Server) uiBoard(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess := sessionFrom(ctx)
	dir, ok := s.sessionDirectory(w, r)
	if !ok {
		return
	}
	counts, err := s.counts(ctx, sess.Tenant.ID)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	v := leadviews.BoardView{PerCol: boardPerCol, HasAny: counts[0].N > 0, Now: time.Now(), MeID: sess.User.ID}
	for i, st := range leads.Statuses {
		col, err := s.boardColumn(ctx, sess.Tenant.ID, dir, st, "")
		if err != nil {
			s.uiError(w, r, err)
			return
		}
		col.Count = counts[i+1]
		v.Columns = append(v.Columns, col)
	}
	v.Page = s.page(w, r, "Board", "board")
	v.Page.Wide = true
	s.render(w, r, http.StatusOK, leadviews.Board(v))
}

// boardColumn is one page of a status's newest leads (keyset, like the
// inbox: a card moved meanwhile is neither repeated nor skipped).
func (s *Server) boardColumn(ctx context.Context, tenantID string, dir directory, status, cursor string) (leadviews.Column, error) {
	page, err := s.Leads.List(ctx, tenantID, leads.Filter{Status: status, Limit: boardPerCol, Cursor: cursor})
	if err != nil {
		return leadviews.Column{}, err
	}
	col := leadviews.Column{Status: status, NextCursor: page.NextCursor}
	for _, l := range page.Items {
		col.Leads = append(col.Leads, dir.leadView(l))
	}
	if err := s.addRepeats(ctx, tenantID, col.Leads); err != nil {
		return leadviews.Column{}, err
	}
	return col, nil
}

// addRepeats splits each lead's times_seen into deliveries and repeats
// (leadviews.Lead.Sightings), one query for the whole page.
func (s *Server) addRepeats(ctx context.Context, tenantID string, ls []leadviews.Lead) error {
	if s.Deliveries == nil || len(ls) == 0 {
		return nil
	}
	ids := make([]string, 0, len(ls))
	for _, l := range ls {
		if l.TimesSeen > 1 {
			ids = append(ids, l.ID)
		}
	}
	reps, err := s.Deliveries.RepeatsByLead(ctx, tenantID, ids)
	if err != nil {
		return err
	}
	for i := range ls {
		ls[i].Repeats = reps[ls[i].ID]
	}
	return nil
}

// uiBoardMore is GET /leads/board/more?status=&cursor=: a column's next
// cards, the fragment htmx puts in place of its "Load more".
func (s *Server) uiBoardMore(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess := sessionFrom(ctx)
	q := r.URL.Query()
	if !leads.ValidStatus(q.Get("status")) || q.Get("cursor") == "" {
		s.uiError(w, r, apperr.New(apperr.BadRequest, "a status and a cursor are needed"))
		return
	}
	dir, ok := s.sessionDirectory(w, r)
	if !ok {
		return
	}
	col, err := s.boardColumn(ctx, sess.Tenant.ID, dir, q.Get("status"), q.Get("cursor"))
	if err != nil {
		if apperr.Is(err, apperr.Invalid) {
			err = apperr.New(apperr.BadRequest, "that cursor is not one this board made")
		}
		s.uiError(w, r, err)
		return
	}
	cs, err := s.counts(ctx, sess.Tenant.ID)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	for _, c := range cs[1:] {
		if c.Status == col.Status {
			col.Count = c
		}
	}
	s.render(w, r, http.StatusOK, leadviews.BoardMore(col, time.Now()))
}

// boardConflict answers a board move whose card is stale (the lead was
// edited since the board was drawn): nothing is written, the board is
// drawn again with the lead where it now is and a flash that says who
// changed it. It reports whether it answered.
func (s *Server) boardConflict(w http.ResponseWriter, r *http.Request, id, status string) bool {
	ctx := r.Context()
	sess := sessionFrom(ctx)
	version, ok := formVersion(r)
	if !ok {
		return false // patchLead explains a missing version
	}
	l, err := s.Leads.Get(ctx, sess.Tenant.ID, id)
	if err != nil || l.Version == version {
		return false
	}
	tl, err := s.Leads.Timeline(ctx, sess.Tenant.ID, id)
	if err != nil {
		s.uiError(w, r, err)
		return true
	}
	by, at := lastEditor(l, tl)
	name := leadviews.Lead{Name: l.Name, Email: l.Email, Phone: l.Phone}.Title()
	s.setFlashError(w, r, "Not moved: "+by+" changed "+name+" at "+components.ExactIn(readerZone(ctx), at)+
		" (now "+components.StatusLabel(l.Status)+"). Your move to "+components.StatusLabel(status)+" was not saved, so nothing of theirs was overwritten.")
	seeOther(w, r, "/leads/board")
	return true
}
