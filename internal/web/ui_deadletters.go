package web

import (
	"errors"
	"net/http"
	"strings"

	"leadpipe/internal/apperr"
	"leadpipe/internal/webhooks"
)

// uiDeadLetters resends (reprocesses under the source's current config)
// or discards dead letters from the source page: one row (action
// "resend:ID" / "discard:ID") or the ticked ones (action "resend" /
// "discard" with id=…). Ids that are not this source's dead letters are
// ignored.
func (s *Server) uiDeadLetters(w http.ResponseWriter, r *http.Request) {
	src, ok := s.postedSource(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	sess := sessionFrom(ctx)
	back := "/sources/" + src.ID + "#dead-letters"
	action, one, _ := strings.Cut(r.PostFormValue("action"), ":")
	picked := r.PostForm["id"]
	if one != "" {
		picked = []string{one}
	}
	if len(picked) == 0 {
		s.setFlash(w, r, "Tick the dead letters to resend or discard first.")
		seeOther(w, r, back)
		return
	}
	switch action {
	case "discard":
		n, err := s.DeliveryOps.DiscardDeadLetters(ctx, sess.Tenant.ID, src.ID, picked)
		if err != nil {
			s.uiError(w, r, err)
			return
		}
		s.setFlash(w, r, plural(n, "dead letter", "dead letters")+" discarded.")
	case "resend":
		mine, err := s.Deliveries.DeadLetters(ctx, sess.Tenant.ID, src.ID, maxDeadLettersShown)
		if err != nil {
			s.uiError(w, r, err)
			return
		}
		ours := map[string]bool{}
		for _, d := range mine {
			ours[d.ID] = true
		}
		resent, still, dup := 0, 0, 0
		var why string
		for _, id := range picked {
			if !ours[id] {
				continue
			}
			it, err := s.DeliveryOps.Reprocess(ctx, sess.Tenant.ID, id)
			switch {
			case apperr.Is(err, apperr.Invalid):
				still++
				var ae *apperr.Error
				if errors.As(err, &ae) {
					why = ae.Message
				}
			case err != nil:
				s.uiError(w, r, err)
				return
			case it.State == webhooks.StateReceived:
				resent++
			default:
				dup++
			}
		}
		msg := ""
		if resent > 0 {
			msg = plural(resent, "dead letter", "dead letters") + " resent: each is a delivery again and its lead appears in Recent deliveries within seconds."
		}
		if dup > 0 {
			msg += " " + plural(dup, "was a duplicate", "were duplicates") + " of a delivery accepted meanwhile."
		}
		if still > 0 {
			msg += " " + plural(still, "still cannot be read", "still cannot be read") + ": " + why
		}
		s.setFlash(w, r, strings.TrimSpace(msg))
	default:
		s.uiError(w, r, apperr.New(apperr.Invalid, "unknown dead-letter action"))
		return
	}
	seeOther(w, r, back)
}

// maxDeadLettersShown is how many dead letters the source page lists (and
// so can act on).
const maxDeadLettersShown = 20
