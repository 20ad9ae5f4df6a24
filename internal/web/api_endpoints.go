package web

import (
	"context"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/events"
)

func (s *Server) listEndpoints(w http.ResponseWriter, r *http.Request) {
	list, err := s.Events.List(r.Context(), Tenant(r))
	s.writeResult(w, r, http.StatusOK, listBody(list), err)
}

func (s *Server) createEndpoint(w http.ResponseWriter, r *http.Request) {
	in, ok := decodeBody[events.CreateInput](s, w, r)
	if !ok {
		return
	}
	ep, err := s.Events.Create(r.Context(), Tenant(r), in)
	s.writeCreated(w, r, "/api/v1/endpoints/"+ep.ID, true, ep, err)
}

func (s *Server) getEndpoint(w http.ResponseWriter, r *http.Request) {
	ep, err := s.Events.Get(r.Context(), Tenant(r), chi.URLParam(r, "id"))
	s.writeResult(w, r, http.StatusOK, ep, err)
}

func (s *Server) patchEndpoint(w http.ResponseWriter, r *http.Request) {
	// Another tenant's id answers 404 before the body is looked at.
	if _, err := s.Events.Get(r.Context(), Tenant(r), chi.URLParam(r, "id")); err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	decodeAndWrite(s, w, r, func(in events.PatchInput) (events.Endpoint, error) {
		return s.Events.Patch(r.Context(), Tenant(r), chi.URLParam(r, "id"), in)
	})
}

func (s *Server) deleteEndpoint(w http.ResponseWriter, r *http.Request) {
	s.writeNoContent(w, r, s.Events.Delete(r.Context(), Tenant(r), chi.URLParam(r, "id")))
}

func (s *Server) rotateEndpointSecret(w http.ResponseWriter, r *http.Request) {
	_, err := s.Events.Get(r.Context(), Tenant(r), chi.URLParam(r, "id"))
	in, ok := decodeAfter[events.RotateInput](s, w, r, err, DecodeOptionalJSON)
	if !ok {
		return
	}
	ep, err := s.Events.Rotate(r.Context(), Tenant(r), chi.URLParam(r, "id"), in)
	if err == nil {
		w.Header().Set("Cache-Control", "no-store") // the new secret, shown this once
	}
	s.writeResult(w, r, http.StatusOK, ep, err)
}

// pageQuery reads ?cursor=&limit= (limit 1–200, default 50).
func pageQuery(r *http.Request) (cursor string, limit int, err error) {
	q := r.URL.Query()
	if v := q.Get("limit"); v != "" {
		n, convErr := strconv.Atoi(v)
		if convErr != nil || n < 1 || n > 200 {
			return "", 0, apperr.InvalidFields(map[string]string{"limit": "must be a whole number from 1 to 200"})
		}
		limit = n
	}
	return q.Get("cursor"), limit, nil
}

func writePage[T any](w http.ResponseWriter, items []T, next string) {
	var nc *string
	if next != "" {
		nc = &next
	}
	WriteJSON(w, http.StatusOK, map[string]any{"items": items, "next_cursor": nc})
}

// servePage answers a paged list: the query's cursor and limit (pageQuery)
// go to list, and its page is written.
func servePage[T any](s *Server, w http.ResponseWriter, r *http.Request, list func(cursor string, limit int) ([]T, string, error)) {
	cursor, limit, err := pageQuery(r)
	serveList(s, w, r, err, func() ([]T, string, error) { return list(cursor, limit) })
}

// serveList answers a paged list whose parameters the handler has read
// (err: they were invalid): list's page is written, or the problem.
func serveList[T any](s *Server, w http.ResponseWriter, r *http.Request, err error, list func() ([]T, string, error)) {
	if err == nil {
		var items []T
		var next string
		items, next, err = list()
		if err == nil {
			writePage(w, items, next)
			return
		}
	}
	WriteError(w, r, s.Log, err)
}

func (s *Server) listEndpointAttempts(w http.ResponseWriter, r *http.Request) {
	servePage(s, w, r, func(cursor string, limit int) ([]events.Attempt, string, error) {
		return s.Events.Attempts(r.Context(), Tenant(r), chi.URLParam(r, "id"), cursor, limit)
	})
}

func (s *Server) recoverEndpoint(w http.ResponseWriter, r *http.Request) {
	_, err := s.Events.Get(r.Context(), Tenant(r), chi.URLParam(r, "id"))
	requeue(s, w, r, err, DecodeJSON, s.Events.Recover)
}

// requeue answers a POST that queues deliveries again for what the URL's
// {id} names, once looked up (found: the lookup's error): the body, read
// with decode, is queue's input.
func requeue[In any](s *Server, w http.ResponseWriter, r *http.Request, found error, decode func(http.ResponseWriter, *http.Request, any) error,
	queue func(ctx context.Context, tenantID, id string, in In) (int, error)) {
	if in, ok := decodeAfter[In](s, w, r, found, decode); ok {
		n, err := queue(r.Context(), Tenant(r), chi.URLParam(r, "id"), in)
		s.writeQueued(w, r, n, err)
	}
}

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	servePage(s, w, r, func(cursor string, limit int) ([]events.EventView, string, error) {
		return s.Events.Events(r.Context(), Tenant(r), r.URL.Query().Get("type"), cursor, limit)
	})
}

func (s *Server) getEvent(w http.ResponseWriter, r *http.Request) {
	v, err := s.Events.Event(r.Context(), Tenant(r), chi.URLParam(r, "id"))
	v.Deliveries = nonNil(v.Deliveries)
	s.writeResult(w, r, http.StatusOK, v, err)
}

func (s *Server) listEventAttempts(w http.ResponseWriter, r *http.Request) {
	servePage(s, w, r, func(cursor string, limit int) ([]events.Attempt, string, error) {
		return s.Events.EventAttempts(r.Context(), Tenant(r), chi.URLParam(r, "id"), cursor, limit)
	})
}

func (s *Server) replayEvent(w http.ResponseWriter, r *http.Request) {
	_, err := s.Events.Event(r.Context(), Tenant(r), chi.URLParam(r, "id"))
	requeue(s, w, r, err, DecodeOptionalJSON, s.Events.Replay)
}
