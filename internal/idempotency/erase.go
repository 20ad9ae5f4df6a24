package idempotency

import (
	"context"
	"encoding/json"
	"strings"

	"leadpipe/internal/db"
)

// ErasedStatus is what a key whose stored response held a person's data
// answers after the person's erasure (docs/ARCHITECTURE.md, "Personal data"): a replay of the
// request that created the lead must neither show the data nor run again.
const ErasedStatus = 410

// erasedBody is the problem stored instead of such a response.
var erasedBody = func() []byte {
	b, _ := json.Marshal(map[string]any{"type": "about:blank", "title": "Gone", "status": ErasedStatus,
		"detail": "the response to this request held personal data that has since been erased"})
	return b
}()

// ScrubResponses replaces, in the caller's transaction, every completed
// response of the tenant whose body contains one of needles with a 410
// problem (the key stays claimed, so a retry is answered, not re-run). It
// reads the tenant's live keys (the TTL bounds them); a key still in
// progress is not touched (it is the caller's own, or completes after the
// erasure with what it wrote then).
func ScrubResponses(ctx context.Context, x db.Ext, tenantID string, needles []string) (int64, error) {
	var conds []string
	args := []any{string(erasedHeaders), erasedBody, tenantID}
	for _, n := range needles {
		if n == "" {
			continue
		}
		conds = append(conds, "INSTR(body, ?) > 0")
		args = append(args, []byte(n))
	}
	if len(conds) == 0 {
		return 0, nil
	}
	res, err := x.ExecContext(ctx, `UPDATE idempotency_keys SET status = 410, headers = ?, body = ?
		WHERE tenant_id = ? AND state = 'completed' AND body IS NOT NULL AND (`+strings.Join(conds, " OR ")+`)`, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

var erasedHeaders = func() []byte {
	b, _ := json.Marshal(map[string]string{"Content-Type": "application/problem+json"})
	return b
}()
