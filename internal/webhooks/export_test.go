package webhooks

import "context"

// ProcessTogether processes the deliveries as one batch (one
// transaction), as a runner does with deliveries that arrive at once; it
// returns each delivery's error.
func (p *Processor) ProcessTogether(ctx context.Context, tenantID string, ids []string) []error {
	batch := make([]*processReq, len(ids))
	for i, id := range ids {
		batch[i] = &processReq{tenantID: tenantID, id: id}
	}
	errs := make([]error, len(ids))
	res, err := p.processBatch(ctx, batch)
	for i := range errs {
		if err != nil {
			errs[i] = err
		} else {
			errs[i] = res[i].err
		}
	}
	return errs
}
