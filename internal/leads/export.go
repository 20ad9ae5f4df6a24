package leads

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/audit"
)

// Export calls each with the leads f matches, newest first, one keyset page
// at a time: memory stays that of one page however many leads there are,
// and a lead created while the export runs is either in it or after it,
// never twice. The export is recorded in the audit log first (who, with
// which filters; never the rows).
func (s *Service) Export(ctx context.Context, tenantID string, f Filter, each func([]Lead) error) error {
	f.Limit, f.Cursor, f.slaNow = maxLimit, "", s.now()
	if _, err := f.normalize(); err != nil {
		return err
	}
	detail := map[string]any{}
	for k, v := range map[string]string{"status": f.Status, "source": f.SourceID, "owner": f.OwnerID, "q": f.Q, "sla": f.SLA} {
		if v != "" {
			detail[k] = v
		}
	}
	if f.DueBefore != nil {
		detail["due_before"] = f.DueBefore.Format("2006-01-02T15:04:05Z07:00")
	}
	if err := audit.Record(ctx, s.DB, tenantID, audit.Entry{Action: "leads.exported", TargetType: "leads", Detail: detail}); err != nil {
		return err
	}
	if f.Q != "" || f.ByDue || len(f.AnyStatus) > 0 {
		// A search or a special order: the list's own planner, page by page.
		for {
			page, err := s.List(ctx, tenantID, f)
			if err != nil {
				return fmt.Errorf("export: %w", err)
			}
			if err := each(page.Items); err != nil {
				return err
			}
			if page.NextCursor == "" {
				return nil
			}
			f.Cursor = page.NextCursor
		}
	}
	// The plain filters: larger keyset pages without the payload column.
	before := ""
	for {
		var items []Lead
		err := s.lagged(ctx, func(x *sqlx.DB) error {
			var err error
			items, err = exportPage(ctx, x, tenantID, f, before, exportPageSize)
			return err
		})
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if err := each(items); err != nil {
			return err
		}
		if len(items) < exportPageSize {
			return nil
		}
		before = items[len(items)-1].ID
	}
}

// exportPageSize is the rows per keyset page of an export: large enough
// that the per-query cost vanishes, small enough to keep memory flat.
const exportPageSize = 1000
