package app

import "context"

func (a *App) wireLeads(ctx context.Context) error { return nil }
