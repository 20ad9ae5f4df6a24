package web

import (
	"bufio"
	"encoding/json"
	"net/http"
	"time"

	liveinbox "leadpipe/internal/live"
)

// liveRecheckEvery is how many heartbeats pass between two checks that a
// stream's session is still valid (a minute at the default heartbeat).
const liveRecheckEvery = 4

// uiEvents streams the signed-in user's tenant's lead events as
// Server-Sent Events (docs/ARCHITECTURE.md, "Live inbox"). The tenant comes
// from the session, never from the request, so a user only ever hears of
// their own tenant. Every event carries its id, so the browser's automatic
// reconnect sends Last-Event-ID and resumes from the tenant's ring; an id
// no longer there gets a "reset" event (the page offers a refresh). The
// stream ends when the request does, within a minute of the session
// ending, or when the browser falls too far behind (a reset, then the
// browser reconnects).
func (s *Server) uiEvents(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	if s.Live == nil || sess == nil {
		s.notFound(w, r)
		return
	}
	tenantID, userID := sess.Tenant.ID, sess.User.ID
	rc := http.NewResponseController(w)
	// The server's WriteTimeout would end every stream after a minute;
	// where it cannot be lifted the browser reconnects and resumes.
	_ = rc.SetWriteDeadline(time.Time{})
	sub, backlog, reset, err := s.Live.Subscribe(r.Context(), tenantID, r.Header.Get("Last-Event-ID"))
	if err != nil {
		s.Log.Warn("live: subscribing failed", "err", err)
		http.Error(w, "live updates are unavailable right now", http.StatusServiceUnavailable)
		return
	}
	defer s.Live.Unsubscribe(sub)

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriter(w)
	flush := func() bool { return bw.Flush() == nil && rc.Flush() == nil }
	// A reconnect waits 3 s; the first bytes also open the stream for
	// proxies that wait for a body.
	_, _ = bw.WriteString("retry: 3000\n: live\n\n")
	if reset {
		_, _ = bw.WriteString("event: reset\ndata: {}\n\n")
	}
	for _, ev := range backlog {
		writeLiveEvent(bw, ev)
	}
	if !flush() {
		return
	}
	tick := time.NewTicker(s.Live.Heartbeat())
	defer tick.Stop()
	beats := 0
	for {
		select {
		case <-r.Context().Done():
			return
		case <-sub.Lost:
			_, _ = bw.WriteString("event: reset\ndata: {}\n\n")
			flush()
			return
		case ev := <-sub.C:
			writeLiveEvent(bw, ev)
			for n := len(sub.C); n > 0; n-- { // what is already waiting goes in the same write
				writeLiveEvent(bw, <-sub.C)
			}
			if !flush() {
				return
			}
		case <-tick.C:
			beats++
			if beats%liveRecheckEvery == 0 && !s.sessionStill(r, tenantID, userID) {
				return
			}
			_, _ = bw.WriteString(": heartbeat\n\n")
			if !flush() {
				return
			}
		}
	}
}

// sessionStill reports whether r's session still signs in userID of
// tenantID (not logged out, expired or disabled since the stream opened).
func (s *Server) sessionStill(r *http.Request, tenantID, userID string) bool {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return false
	}
	u, err := s.Tenants.SessionUser(r.Context(), c.Value)
	return err == nil && u.ID == userID && u.TenantID == tenantID
}

func writeLiveEvent(bw *bufio.Writer, ev liveinbox.Event) {
	b, err := json.Marshal(ev)
	if err != nil {
		return // strings and a time only: cannot fail
	}
	_, _ = bw.WriteString("id: " + ev.ID + "\nevent: lead\ndata: ")
	_, _ = bw.Write(b)
	_, _ = bw.WriteString("\n\n")
}
