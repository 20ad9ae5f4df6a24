// Package ids makes and checks Leadpipe's ids: ULIDs, 26 characters of Crockford
// base32 that sort by creation time as strings.
package ids

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"
)

// crockford is the ULID alphabet: ids sort by creation time as strings.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

var idMu sync.Mutex
var lastMS uint64
var lastRand [10]byte

// New returns a 26-character ULID. Within one process ids are strictly
// increasing (monotonic within a millisecond), so keyset pagination on id
// is newest-first by creation.
func New() string { return newAt(time.Now()) }

func newAt(t time.Time) string {
	ms := uint64(t.UnixMilli())
	idMu.Lock()
	var r [10]byte
	if ms <= lastMS {
		ms = lastMS
		r = lastRand
		for i := 9; i >= 0; i-- { // increment the random part
			r[i]++
			if r[i] != 0 {
				break
			}
		}
	} else {
		_, _ = rand.Read(r[:])
	}
	lastMS, lastRand = ms, r
	idMu.Unlock()

	var b [16]byte
	binary.BigEndian.PutUint16(b[0:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(b[2:6], uint32(ms))
	copy(b[6:], r[:])
	return encode(b)
}

func encode(b [16]byte) string {
	// 128 bits → 26 base32 chars (first char carries 3 bits).
	hi := binary.BigEndian.Uint64(b[0:8])
	lo := binary.BigEndian.Uint64(b[8:16])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// Valid reports whether s looks like an id we issued (cheap input check
// before a query).
func Valid(s string) bool {
	if len(s) != 26 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}
