package kinds

import (
	"net/http"
	"net/netip"
	"time"
)

// Request is what a kind may check beyond the headers and the body: HubSpot
// signs the method and the public URI, a token source may limit the client
// addresses. The HTTP layer fills it (docs/SENDERS.md, "Behind a proxy").
type Request struct {
	Header http.Header
	Method string
	// URI is the public request URI the sender called: the configured base
	// URL + path + query (never the Host header, which a sender controls).
	URI string
	// ClientAddr is the connecting address, or the first untrusted
	// X-Forwarded-For hop when a trusted proxy sits in front; zero when
	// unknown.
	ClientAddr netip.Addr
}

// RequestVerifier is a Kind whose check needs more of the request than the
// headers. Kinds without it are verified by Verify on the headers alone.
type RequestVerifier interface {
	VerifyRequest(r Request, body []byte, secrets []string, now time.Time) error
}

// VerifyRequest verifies body against the request with k: through
// VerifyRequest where the kind needs the request, else Verify.
func VerifyRequest(k Kind, r Request, body []byte, secrets []string, now time.Time) error {
	if rv, ok := k.(RequestVerifier); ok {
		return rv.VerifyRequest(r, body, secrets, now)
	}
	return k.Verify(r.Header, body, secrets, now)
}

// SampleURI is the public URI Sign signs a HubSpot sample for when no URI is
// given (tests and fuzzing verify against it).
const SampleURI = "https://leadpipe.example/hooks/acme/hubspot"
