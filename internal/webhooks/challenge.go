package webhooks

import (
	"context"
	"sync"
	"time"

	"leadpipe/internal/apperr"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

// knownRefresh is how old a remembered LinkedIn secret may be before a
// challenge tries the database for a newer one (a rotation made by another
// replica); when that fails, the remembered one answers.
const knownRefresh = 10 * time.Minute

// knownSource is a LinkedIn source's live secrets as last resolved.
type knownSource struct {
	secrets []string
	at      time.Time
}

// secretMemory keeps the secrets of the LinkedIn sources this process has
// resolved, so that LinkedIn's validation GET never waits on MySQL.
type secretMemory struct {
	mu sync.Mutex
	m  map[string]knownSource
}

// rememberSecrets keeps a LinkedIn source's secrets (other kinds: nothing).
func (in *Ingest) rememberSecrets(tenant, source string, res sources.Resolved) {
	if res.Source.Kind != kinds.LinkedIn {
		return
	}
	in.memory.mu.Lock()
	defer in.memory.mu.Unlock()
	if in.memory.m == nil || len(in.memory.m) > 10000 {
		in.memory.m = map[string]knownSource{}
	}
	in.memory.m[tenant+"/"+source] = knownSource{secrets: append([]string(nil), res.Secrets...), at: time.Now()}
}

// knownSecrets returns the remembered secrets of a LinkedIn source. An old
// entry is refreshed from the database first, within a second; a failed
// refresh (the database is down) keeps the old entry.
func (in *Ingest) knownSecrets(ctx context.Context, tenant, source string) ([]string, bool) {
	key := tenant + "/" + source
	in.memory.mu.Lock()
	e, ok := in.memory.m[key]
	in.memory.mu.Unlock()
	if !ok {
		return nil, false
	}
	if time.Since(e.at) > knownRefresh {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		res, err := in.Sources.Resolve(rctx, tenant, source)
		cancel()
		switch {
		case err == nil && res.Source.Kind == kinds.LinkedIn:
			in.rememberSecrets(tenant, source, res)
			return res.Secrets, true
		case err == nil || apperr.Is(err, apperr.NotFound): // gone, or no longer LinkedIn
			in.memory.mu.Lock()
			delete(in.memory.m, key)
			in.memory.mu.Unlock()
			return nil, false
		}
	}
	return e.secrets, true
}
