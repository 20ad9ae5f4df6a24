package app

import "context"

// wireUI has nothing to build: the web UI (internal/web/ui_*.go) mounts
// itself in the route table and uses the services the other areas wire
// (a.Web.Leads, a.Web.Idem's store for its create forms, a.Web.Monitor).
func (a *App) wireUI(ctx context.Context) error { return nil }
