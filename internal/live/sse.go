package live

import (
	"bufio"
	"encoding/json"
	"net/http"
	"time"
)

// recheckEvery is how many heartbeats pass between two checks that the
// stream's session is still valid (a minute at the default heartbeat).
const recheckEvery = 4

// Serve streams tenantID's events to one browser as Server-Sent Events
// until the request ends, the session is gone (still reports false; nil:
// never checked) or the browser falls too far behind. Every event carries
// its id, so the browser's automatic reconnect sends Last-Event-ID and
// resumes from the ring; an id no longer there gets a "reset" event.
func (h *Hub) Serve(w http.ResponseWriter, r *http.Request, tenantID string, still func(*http.Request) bool) {
	rc := http.NewResponseController(w)
	// The server's WriteTimeout would end every stream after a minute.
	_ = rc.SetWriteDeadline(time.Time{}) // not supported: the stream ends at the timeout and the browser reconnects
	sub, backlog, reset, err := h.Subscribe(r.Context(), tenantID, r.Header.Get("Last-Event-ID"))
	if err != nil {
		h.log.Warn("live: subscribing failed", "err", err)
		http.Error(w, "live updates are unavailable right now", http.StatusServiceUnavailable)
		return
	}
	defer h.Unsubscribe(sub)

	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	hd.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriter(w)
	flush := func() bool {
		if bw.Flush() != nil {
			return false
		}
		return rc.Flush() == nil
	}
	// A reconnect waits 3 s; the first line also opens the stream for
	// proxies that wait for a body.
	_, _ = bw.WriteString("retry: 3000\n: live\n\n")
	if reset {
		_, _ = bw.WriteString("event: reset\ndata: {}\n\n")
	}
	for _, ev := range backlog {
		writeEvent(bw, ev)
	}
	if !flush() {
		return
	}
	hb := h.Heartbeat
	if hb <= 0 {
		hb = DefaultHeartbeat
	}
	tick := time.NewTicker(hb)
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
			writeEvent(bw, ev)
			// Whatever else is already waiting goes in the same write.
			for n := len(sub.C); n > 0; n-- {
				writeEvent(bw, <-sub.C)
			}
			if !flush() {
				return
			}
		case <-tick.C:
			beats++
			if still != nil && beats%recheckEvery == 0 && !still(r) {
				return
			}
			_, _ = bw.WriteString(": heartbeat\n\n")
			if !flush() {
				return
			}
		}
	}
}

func writeEvent(bw *bufio.Writer, ev Event) {
	b, err := json.Marshal(ev)
	if err != nil {
		return // only strings and a time: cannot fail
	}
	_, _ = bw.WriteString("id: " + ev.ID + "\nevent: lead\ndata: ")
	_, _ = bw.Write(b)
	_, _ = bw.WriteString("\n\n")
}
