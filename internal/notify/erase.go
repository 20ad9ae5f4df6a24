package notify

import (
	"context"
	"strings"

	"leadpipe/internal/db"
)

// EraseLead blanks, in the erasure's transaction, the rendered messages
// that name an erased lead (docs/ARCHITECTURE.md, "Personal data"): every
// message about the lead, and the digests whose text holds one of the
// person's values (needles). A pending message about the lead is skipped
// when its turn comes (the lead is gone). It returns how many rows were
// blanked.
func EraseLead(ctx context.Context, x db.Ext, tenantID, leadID string, needles []string) (int64, error) {
	q := `UPDATE notifications SET subject = NULL, body_text = NULL, body_html = NULL
		WHERE tenant_id = ? AND (subject IS NOT NULL OR body_text IS NOT NULL) AND (lead_id = ?`
	args := []any{tenantID, leadID}
	var or []string
	for _, n := range needles {
		or = append(or, `LOCATE(?, body_text) > 0`)
		args = append(args, n)
	}
	if len(or) > 0 {
		q += ` OR (kind = 'digest' AND (` + strings.Join(or, " OR ") + `))`
	}
	q += `)`
	res, err := x.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
