package app

import "context"

// wire connects the subsystems: routes, task handlers, periodic tasks.
func (a *App) wire(ctx context.Context) error {
	return nil
}
