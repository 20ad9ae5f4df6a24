package leads

import (
	"context"
	"maps"

	"leadpipe/internal/db"
	"leadpipe/internal/ids"
)

// Names returns the display name of each of the tenant's leads among ids
// (the name, else the e-mail, else the company); an id that is not the
// tenant's lead, or is erased, is absent. For pages that show ids, such as
// the audit log. At most 500 ids.
func (s *Service) Names(ctx context.Context, tenantID string, leadIDs []string) (map[string]string, error) {
	var valid []string
	for _, id := range leadIDs {
		if ids.Valid(id) && len(valid) < 500 {
			valid = append(valid, id)
		}
	}
	if len(valid) == 0 {
		return map[string]string{}, nil
	}
	out, err := db.KeyValuesIn[string](ctx, s.DB, `SELECT id AS k, COALESCE(NULLIF(name, ''), NULLIF(email, ''), NULLIF(company, ''), '') AS v
FROM leads WHERE tenant_id = ? AND id IN (?)`, tenantID, valid)
	maps.DeleteFunc(out, func(_, label string) bool { return label == "" }) // erased: nothing left to show
	return out, err
}
