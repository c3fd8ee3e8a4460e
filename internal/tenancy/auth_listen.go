package tenancy

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/portcullis-dev/portcullis/internal/pgnotify"
)

// Subscribe registers the authenticator with the process's listener: a
// revocation or deletion takes effect on arrival, and any change, or a
// reconnect (notifications may have been lost), triggers a reload.
func (a *Authenticator) Subscribe(l *pgnotify.Listener) {
	l.Subscribe(Channel, a.notified)
	l.OnConnect(a.requestReload)
}

// notified handles one payload. It runs on the listener's goroutine and
// never blocks.
func (a *Authenticator) notified(payload string) {
	kind, idStr, ok := strings.Cut(payload, ":")
	if ok {
		if id, err := strconv.ParseInt(idStr, 10, 64); err == nil {
			a.forget(kind, id)
		}
	}
	a.requestReload()
}

// forget marks revoked, at once, every cached credential that a revocation
// or deletion of (kind, id) covers, and remembers it until a reload that
// began after it has been applied, so that a reload racing with the
// revocation cannot bring the credential back.
func (a *Authenticator) forget(kind string, id int64) {
	switch kind {
	case "credential", "cluster", "tenant":
	default:
		return
	}
	a.mu.Lock()
	a.tombstones[kind+":"+strconv.FormatInt(id, 10)] = a.now()
	a.mu.Unlock()
	if s := a.snap.Load(); s != nil {
		s.applyTombstone(kind, id)
	}
}

func (s *snapshot) applyTombstone(kind string, id int64) {
	if kind == "credential" {
		if e := s.byID[id]; e != nil {
			e.revoked.Store(true)
		}
		return
	}
	for _, e := range s.byID {
		if (kind == "cluster" && e.id.ClusterID == id) || (kind == "tenant" && e.id.TenantID == id) {
			e.revoked.Store(true)
		}
	}
}

func (a *Authenticator) requestReload() {
	select {
	case a.reloadReq <- struct{}{}:
	default: // a reload is already pending; it will see this change too
	}
}

// Run loads the credentials, then reloads them on demand and every
// ResyncInterval, and writes last_used_at every UsageFlushInterval, until ctx
// ends. A failed reload keeps the last good set. It returns nil when ctx ends,
// after a final flush of usage.
func (a *Authenticator) Run(ctx context.Context) error {
	resync := time.NewTicker(a.opts.ResyncInterval)
	defer resync.Stop()
	flush := time.NewTicker(a.opts.UsageFlushInterval)
	defer flush.Stop()
	a.requestReload()
	backoff := time.Duration(0)
	for {
		var retry <-chan time.Time
		if backoff > 0 {
			retry = time.After(backoff)
		}
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := a.FlushUsage(fctx); err != nil {
				a.logger.Warn("tenancy: final last_used_at flush failed", "error", err)
			}
			return nil
		case <-a.reloadReq:
		case <-resync.C:
		case <-retry:
		case <-flush.C:
			if err := a.FlushUsage(ctx); err != nil && ctx.Err() == nil {
				a.logger.Warn("tenancy: last_used_at flush failed; will retry", "error", err)
			}
			continue
		}
		if err := a.Load(ctx); err != nil {
			if ctx.Err() != nil {
				continue
			}
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
			a.logger.Warn("tenancy: credential reload failed; serving the last loaded set",
				"error", err, "loaded_at", a.LoadedAt(), "retry_in", backoff.String())
			continue
		}
		backoff = 0
	}
}
