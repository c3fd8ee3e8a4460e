package policystore

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/portcullis-dev/portcullis/internal/pgnotify"
)

// How the cache stays fresh: notifications refresh a tenant at once, a
// periodic resync heals lost ones, and every contact with the database
// records whether it is reachable.

// noteVersion records that tenantID reached version.
func (c *Cache) noteVersion(tenantID, version int64) {
	for {
		cur, loaded := c.latest.LoadOrStore(tenantID, version)
		if !loaded || cur.(int64) >= version || c.latest.CompareAndSwap(tenantID, cur, version) {
			return
		}
	}
}

// behind reports whether a newer version than version was notified.
func (c *Cache) behind(tenantID, version int64) bool {
	cur, ok := c.latest.Load(tenantID)
	return ok && cur.(int64) > version
}

func (c *Cache) queueRefresh(tenantID int64) {
	select {
	case c.refresh <- tenantID:
	default:
		c.Resync() // the queue is full: let the resync find it
	}
}

// Subscribe registers the cache with the process's notification listener:
// policy changes refresh the tenant at once, and every (re)connect resyncs,
// since notifications sent while disconnected are lost. A lost connection
// resyncs too, so that an outage shows in Staleness at once rather than at
// the next periodic resync (up to ResyncInterval later).
func (c *Cache) Subscribe(l *pgnotify.Listener) {
	l.Subscribe(ChannelPolicies, c.notified)
	l.OnConnect(c.Resync)
	l.OnDisconnect(c.Resync)
}

func (c *Cache) notified(payload string) {
	t, v, ok := strings.Cut(payload, ":")
	tenantID, err1 := strconv.ParseInt(t, 10, 64)
	version, err2 := strconv.ParseInt(v, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return
	}
	c.noteVersion(tenantID, version)
	if s, ok := c.lru.Peek(tenantID); ok && s.Version < version {
		c.queueRefresh(tenantID)
	}
}

// Resync asks Run to compare every cached version with the database now.
func (c *Cache) Resync() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Run warms the cache up, then keeps it fresh until ctx ends: it refreshes
// notified tenants, and resyncs every ResyncInterval (sooner on Resync),
// retrying with backoff while the database is away.
func (c *Cache) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case t := <-c.refresh:
					c.refreshTenant(t)
				}
			}
		}()
	}
	backoff := 100 * time.Millisecond
	for !c.warmed.Load() {
		if err := c.warm(ctx); err != nil {
			c.log.Warn("policy cache warm-up failed; retrying", "error", err, "backoff", backoff.String())
			if !sleep(ctx, backoff) {
				return nil
			}
			backoff = min(backoff*2, c.cfg.ResyncInterval)
			continue
		}
		c.warmed.Store(true)
	}
	backoff = 100 * time.Millisecond
	next := c.cfg.ResyncInterval
	for {
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-c.kick:
			t.Stop()
		case <-t.C:
		}
		if err := c.resync(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			c.log.Warn("policy database unreachable; serving cached policy snapshots, which may be stale",
				"error", err, "stale_for", c.Staleness().Round(time.Millisecond).String(), "retry_in", backoff.String())
			next = backoff
			backoff = min(backoff*2, c.cfg.ResyncInterval)
			continue
		}
		backoff = 100 * time.Millisecond
		next = c.cfg.ResyncInterval
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (c *Cache) refreshTenant(tenantID int64) {
	// Do may join a load that started before the write; go again then.
	for range 3 {
		v, err, _ := c.group.Do(strconv.FormatInt(tenantID, 10), func() (any, error) { return c.load(tenantID) })
		if err != nil {
			c.Resync() // retried with backoff by Run
			return
		}
		if !c.behind(tenantID, v.(*Snapshot).Version) {
			return
		}
	}
	c.Resync()
}

// WarmUp loads the recently served tenants once. Main calls it before
// serving, so that a replica is ready at once; if it fails, Run retries.
func (c *Cache) WarmUp(ctx context.Context) error {
	if err := c.warm(ctx); err != nil {
		return err
	}
	c.warmed.Store(true)
	return nil
}

// warm loads the recently served tenants.
func (c *Cache) warm(ctx context.Context) error {
	qctx, cancel := context.WithTimeout(ctx, c.cfg.LoadTimeout)
	tenants, err := c.store.RecentTenantsAll(qctx, c.cfg.WarmWindow, c.cfg.WarmTenants, c.cfg.Tenants, c.cfg.ExcludeTenants)
	cancel()
	if err != nil {
		c.contactFailed(err)
		return err
	}
	c.contactOK()
	start := time.Now()
	for _, t := range tenants {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if _, err, _ := c.group.Do(strconv.FormatInt(t, 10), func() (any, error) { return c.load(t) }); err != nil {
			return err
		}
	}
	c.log.Info("policy cache warmed up", "tenants", len(tenants), "duration", time.Since(start).String())
	return nil
}

// resync compares every cached snapshot's version with the database and
// reloads the outdated ones; it also records which tenants were served.
func (c *Cache) resync(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.LoadTimeout)
	defer cancel()
	snaps := c.lru.Values()
	ids := make([]int64, len(snaps))
	var served []int64
	for i, s := range snaps {
		ids[i] = s.TenantID
		if s.served.Swap(false) {
			served = append(served, s.TenantID)
		}
	}
	versions, err := c.store.headVersionsAll(ctx, ids)
	if err == nil {
		err = c.store.touchServedAll(ctx, served)
	}
	if err != nil {
		for _, t := range served {
			if s, ok := c.lru.Peek(t); ok {
				s.served.Store(true)
			}
		}
		c.m.resyncs.WithLabelValues("error").Inc()
		c.contactFailed(err)
		return err
	}
	c.contactOK()
	var stale int
	for _, s := range snaps {
		if versions[s.TenantID] != s.Version {
			stale++
			if _, err, _ := c.group.Do(strconv.FormatInt(s.TenantID, 10), func() (any, error) { return c.load(s.TenantID) }); err != nil {
				c.m.resyncs.WithLabelValues("error").Inc()
				return err
			}
		}
	}
	if stale > 0 {
		c.log.Info("policy cache resync reloaded outdated snapshots", "tenants", stale)
	}
	c.m.resyncs.WithLabelValues("ok").Inc()
	return nil
}

func (c *Cache) contactOK() {
	now := time.Now().UnixNano()
	c.reached.Store(true)
	c.lastVerified.Store(now)
	if since := c.downSince.Swap(0); since != 0 {
		c.log.Info("policy database reachable again", "stale_for", time.Duration(now-since).Round(time.Millisecond).String())
	}
}

func (c *Cache) contactFailed(error) {
	now := time.Now().UnixNano()
	c.lastFailure.Store(now)
	c.downSince.CompareAndSwap(0, now)
}
