package app

import "context"

func (a *App) wireUI(ctx context.Context) error { return nil }
