// Package migrations embeds the SQL migrations. One DDL change per file,
// written with IF NOT EXISTS so a half-applied run can be re-run (MySQL
// commits DDL implicitly). Number ranges: 00xx core, 01xx idempotency,
// 015x reconcile, 02xx monitoring, 025x web UI, 03xx outbound.
package migrations

import "embed"

//go:embed *.sql
var FS embed.FS
