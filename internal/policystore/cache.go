package policystore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/fault"
)

// Snapshot is one tenant's compiled, indexed policy set, as of one tenant
// policy version. It is immutable and safe for concurrent use.
type Snapshot struct {
	TenantID int64
	// Version is the tenant policy version the snapshot was built from. All
	// of its objects come from that one version.
	Version  int64
	Compiled *evaluator.Snapshot
	LoadedAt time.Time
	// Bytes is the approximate heap the snapshot holds.
	Bytes int64

	served atomic.Bool // served since the last activity record
}

// CacheConfig sizes and paces a Cache. Zero values take the defaults.
type CacheConfig struct {
	MaxTenants int   // default 10,000
	MaxBytes   int64 // approximate heap bound; default 4 GiB
	// ResyncInterval is how often cached versions are compared with the
	// database, to heal lost notifications; default 10 s, at most 30 s.
	ResyncInterval time.Duration
	// LoadTimeout bounds one cold load; default 3 s.
	LoadTimeout time.Duration
	// WarmWindow and WarmTenants choose the tenants loaded at start-up: those
	// served within the window, most recent first; defaults 24 h and
	// MaxTenants.
	WarmWindow  time.Duration
	WarmTenants int
	// Tenants and ExcludeTenants are the names of the tenants the
	// deployment answers for, or does not (the gateway's --tenants and
	// --exclude-tenants): warm-up loads no other. Empty: every tenant.
	Tenants, ExcludeTenants []string
	Logger                  *slog.Logger
	// Registry receives the cache's metrics; nil registers none.
	Registry *prometheus.Registry
}

func (c *CacheConfig) defaults() {
	if c.MaxTenants <= 0 {
		c.MaxTenants = 10_000
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = 4 << 30
	}
	if c.ResyncInterval <= 0 {
		c.ResyncInterval = 10 * time.Second
	}
	c.ResyncInterval = min(c.ResyncInterval, 30*time.Second)
	if c.LoadTimeout <= 0 {
		c.LoadTimeout = 3 * time.Second
	}
	if c.WarmWindow <= 0 {
		c.WarmWindow = 24 * time.Hour
	}
	if c.WarmTenants <= 0 || c.WarmTenants > c.MaxTenants {
		c.WarmTenants = c.MaxTenants
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Cache serves compiled tenant snapshots from memory. A hit never touches
// the database. A miss loads and compiles once however many requests wait
// for it. Notifications refresh changed tenants at once; a periodic resync
// heals lost ones. While the database is away, cached snapshots keep being
// served and are reported stale; a tenant with no snapshot then gets
// ErrColdUnavailable, never an empty policy set.
type Cache struct {
	store *Store
	cfg   CacheConfig
	log   *slog.Logger
	lru   *lru.Cache[int64, *Snapshot]
	bytes atomic.Int64
	group singleflight.Group

	installMu sync.Mutex
	// latest is the newest version each tenant was notified at. A load that
	// began before a write can finish after its notification; comparing
	// with latest catches that instead of waiting for the resync.
	latest  sync.Map // int64 tenant -> int64 version
	kick    chan struct{}
	refresh chan int64

	reached      atomic.Bool  // the database answered at least once
	warmed       atomic.Bool  // start-up warm-up finished
	lastVerified atomic.Int64 // unix nanos of the last successful contact
	downSince    atomic.Int64 // unix nanos of the first failure since then; 0 if up
	lastFailure  atomic.Int64 // unix nanos of the last failed contact

	m cacheMetrics
}

// NewCache returns a cache over store. Call Subscribe with the process's
// notification listener before the listener runs, then Run.
func NewCache(store *Store, cfg CacheConfig) (*Cache, error) {
	cfg.defaults()
	c := &Cache{store: store, cfg: cfg, log: cfg.Logger,
		kick: make(chan struct{}, 1), refresh: make(chan int64, 4096)}
	var err error
	c.lru, err = lru.NewWithEvict(cfg.MaxTenants, func(_ int64, s *Snapshot) {
		c.bytes.Add(-s.Bytes)
		c.m.evictions.Inc()
	})
	if err != nil {
		return nil, err
	}
	c.m = newCacheMetrics(c, cfg.Registry)
	return c, nil
}

// Snapshot returns the tenant's snapshot. A hit is a map lookup; a miss loads from
// the database, sharing the load with concurrent callers. When the tenant is
// not cached and the database cannot be reached, the error has code
// fault.Unavailable and wraps ErrColdUnavailable.
func (c *Cache) Snapshot(ctx context.Context, tenantID int64) (*Snapshot, error) {
	if s, ok := c.lru.Get(tenantID); ok {
		c.m.hits.Inc()
		if !s.served.Load() {
			s.served.Store(true)
		}
		if c.downSince.Load() != 0 {
			c.m.staleServed.Inc()
		}
		return s, nil
	}
	c.m.misses.Inc()
	// While the database is known to be down, fail fast instead of making
	// every cold request wait for a connect timeout; retry at most every
	// second.
	if c.downSince.Load() != 0 && time.Since(time.Unix(0, c.lastFailure.Load())) < time.Second {
		c.m.coldUnavailable.Inc()
		return nil, coldUnavailable(tenantID, errors.New("database unreachable"))
	}
	ch := c.group.DoChan(strconv.FormatInt(tenantID, 10), func() (any, error) {
		return c.load(tenantID)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			c.m.coldUnavailable.Inc()
			return nil, coldUnavailable(tenantID, r.Err)
		}
		s := r.Val.(*Snapshot)
		s.served.Store(true)
		return s, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Current is Snapshot, but never older than the tenant's version in the
// database when it can be read: what the admin API evaluates right after
// an apply must hold that apply, which Snapshot's cached copy gets only
// when the change's notification arrives (milliseconds later). When the
// database cannot be read, it is Snapshot's answer.
func (c *Cache) Current(ctx context.Context, tenantID int64) (*Snapshot, error) {
	s, err := c.Snapshot(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	head, verr := c.store.TenantVersion(ctx, tenantID)
	if verr != nil || head <= s.Version {
		return s, nil
	}
	c.noteVersion(tenantID, head)
	ch := c.group.DoChan(strconv.FormatInt(tenantID, 10), func() (any, error) {
		return c.load(tenantID)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return s, nil // the cached one, as the webhook would serve it
		}
		fresh := r.Val.(*Snapshot)
		if fresh.Version < head {
			// A load started before the change joined: load once more.
			if again, err := c.load(tenantID); err == nil {
				fresh = again
			}
		}
		return fresh, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func coldUnavailable(tenantID int64, cause error) error {
	return fault.Wrap(fmt.Errorf("%w: %w", ErrColdUnavailable, cause), fault.Unavailable,
		"policies of tenant %d are not loaded and the policy database is unreachable; retry later", tenantID)
}

// load reads and compiles the tenant's current snapshot and installs it. It
// runs detached from any one request, under LoadTimeout.
func (c *Cache) load(tenantID int64) (*Snapshot, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.LoadTimeout)
	defer cancel()
	start := time.Now()
	version, objs, size, err := c.store.liveObjects(ctx, tenantID)
	if err != nil {
		c.m.loads.WithLabelValues("error").Inc()
		c.contactFailed(err)
		return nil, err
	}
	c.contactOK()
	// Not ctx: its timeout bounds the database's answer; a tenant's
	// stored policies always compile to the end.
	compiled, err := compileObjects(context.Background(), objs)
	if err != nil {
		c.m.loads.WithLabelValues("error").Inc()
		return nil, fmt.Errorf("compile tenant %d version %d: %w", tenantID, version, err)
	}
	c.m.loads.WithLabelValues("ok").Inc()
	c.m.loadSeconds.Observe(time.Since(start).Seconds())
	s := &Snapshot{TenantID: tenantID, Version: version, Compiled: compiled, LoadedAt: time.Now(),
		Bytes: estimateBytes(compiled, size)}
	return c.install(s), nil
}

// install puts s in the cache unless a snapshot of the same or a newer
// version is already there, and returns the one that is cached.
func (c *Cache) install(s *Snapshot) *Snapshot {
	c.installMu.Lock()
	defer c.installMu.Unlock()
	if old, ok := c.lru.Peek(s.TenantID); ok {
		if old.Version >= s.Version {
			return old
		}
		if old.served.Load() {
			s.served.Store(true)
		}
		c.bytes.Add(-old.Bytes)
	}
	c.lru.Add(s.TenantID, s)
	c.bytes.Add(s.Bytes)
	for c.bytes.Load() > c.cfg.MaxBytes && c.lru.Len() > 1 {
		c.lru.RemoveOldest()
	}
	if c.behind(s.TenantID, s.Version) {
		c.queueRefresh(s.TenantID)
	}
	return s
}

// Staleness is how long the cached snapshots have gone unverified because
// the database is unreachable; 0 while it answers.
func (c *Cache) Staleness() time.Duration {
	if c.downSince.Load() == 0 {
		return 0
	}
	last := c.lastVerified.Load()
	if last == 0 {
		return 0
	}
	return time.Since(time.Unix(0, last))
}

// Ready reports nil once the cache has reached the database and warmed up.
// It stays ready when the database goes away later: a warm replica keeps
// serving.
func (c *Cache) Ready() error {
	switch {
	case !c.reached.Load():
		return errors.New("policy store: the database has not been reached yet")
	case !c.warmed.Load():
		return errors.New("policy store: cache warm-up has not finished")
	}
	return nil
}

// Len returns the number of cached tenants and their approximate bytes.
func (c *Cache) Len() (tenants int, bytes int64) { return c.lru.Len(), c.bytes.Load() }

// Invalidate drops the tenant's snapshot, if cached.
func (c *Cache) Invalidate(tenantID int64) { c.lru.Remove(tenantID) }

// estimateBytes approximates the heap a compiled snapshot holds, from
// measurements of the baseline policies (see BenchmarkHeapPerTenant): a
// fixed part, a part per compiled CEL expression, and a multiple of the
// stored JSON for the decoded objects.
func estimateBytes(s *evaluator.Snapshot, jsonBytes int) int64 {
	st := s.Stats()
	return int64(estimateBase + estimatePerExpression*st.Expressions + estimatePerProgram*st.Programs + estimatePerJSONByte*jsonBytes)
}
