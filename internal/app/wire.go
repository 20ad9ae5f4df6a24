package app

import "context"

// wire connects the subsystems: services, routes, task handlers and
// periodic tasks. Each area has its own wire_<area>.go. Monitor goes first:
// it sets a.Stats, which ingest and reconcile record into.
func (a *App) wire(ctx context.Context) error {
	for _, f := range []func(context.Context) error{a.wireMonitor, a.wireIngest, a.wireLeads, a.wireImports, a.wireReconcile, a.wireEvents, a.wireRetention, a.wireUI} {
		if err := f(ctx); err != nil {
			return err
		}
	}
	return nil
}
