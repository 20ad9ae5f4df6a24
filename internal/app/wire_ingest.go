package app

import "context"

func (a *App) wireIngest(ctx context.Context) error { return nil }
