package monitor

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// Totals are a source's deliveries and duplicates over a period.
type Totals struct{ Deliveries, Duplicates int64 }

// Totals sums the deliveries and duplicates of the given sources over
// [from, to) (minute-aligned; whole hours from the hourly table).
func (s *Service) Totals(ctx context.Context, tenantID string, sourceIDs []string, from, to time.Time) (map[string]Totals, error) {
	var sums map[string]counts
	err := s.read(ctx, func(x *sqlx.DB) error {
		var err error
		sums, err = sumRange(ctx, x, tenantID, sourceIDs, from.UTC().Truncate(time.Minute), to.UTC().Truncate(time.Minute))
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]Totals, len(sums))
	for id, c := range sums {
		out[id] = Totals{Deliveries: c[iDeliveries], Duplicates: c[iDuplicates]}
	}
	return out, nil
}
