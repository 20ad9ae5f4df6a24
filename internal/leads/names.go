package leads

import (
	"context"

	"leadpipe/internal/db"
	"leadpipe/internal/ids"
)

// Names returns the display name of each of the tenant's leads among ids
// (the name, else the e-mail, else the company); an id that is not the
// tenant's lead, or is erased, is absent. For pages that show ids, such as
// the audit log. At most 500 ids.
func (s *Service) Names(ctx context.Context, tenantID string, leadIDs []string) (map[string]string, error) {
	out := map[string]string{}
	var valid []string
	for _, id := range leadIDs {
		if ids.Valid(id) && len(valid) < 500 {
			valid = append(valid, id)
		}
	}
	if len(valid) == 0 {
		return out, nil
	}
	var rows []struct {
		ID    string `db:"id"`
		Label string `db:"label"`
	}
	if err := db.SelectIn(ctx, s.DB, &rows, `SELECT id, COALESCE(NULLIF(name, ''), NULLIF(email, ''), NULLIF(company, ''), '') AS label
FROM leads WHERE tenant_id = ? AND id IN (?)`, tenantID, valid); err != nil {
		return nil, err
	}
	for _, r := range rows {
		if r.Label != "" {
			out[r.ID] = r.Label
		}
	}
	return out, nil
}
