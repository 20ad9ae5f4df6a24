package app

import "context"

func (a *App) wireReconcile(ctx context.Context) error { return nil }
