package app

import "context"

func (a *App) wireMonitor(ctx context.Context) error { return nil }
