// Package web holds the HTTP layer: one route table, handlers (one file per
// area), middleware and the single error → HTTP mapping.
package web

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/config"
	"leadpipe/internal/sources"
	"leadpipe/internal/tenants"
)

// Server is the struct of dependencies every handler is a method on.
type Server struct {
	Log     *slog.Logger
	Cfg     *config.Config
	DB      *sqlx.DB
	Tenants *tenants.Service
	Sources *sources.Service

	// Ready reports what is not ready ("" when all is well) for /readyz.
	Ready func(ctx context.Context) map[string]string

	// Subsystem services; each area adds its own line below its anchor.
	// anchor:ingest
	// anchor:leads
	// anchor:monitor
	// anchor:reconcile
	// anchor:ui

	// Mounted subsystems (nil ones are left out of the route table).
	Hooks   http.Handler // POST/GET /hooks/{tenant}/{source}
	Metrics http.Handler // GET /metrics
	Extra   []func(r Router)
}
