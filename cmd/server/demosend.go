package main

import (
	"context"
	"fmt"
	"io"

	"leadpipe/internal/config"
)

func demoSend(ctx context.Context, cfg *config.Config, args []string, getenv func(string) string, out io.Writer) error {
	return fmt.Errorf("demo-send: not built yet")
}
