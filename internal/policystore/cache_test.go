package policystore

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgnotify"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// replica is one gateway's view: its own pool, listener and cache on the
// shared database.
type replica struct {
	store *Store
	cache *Cache
	reg   *prometheus.Registry
}

func startReplica(t *testing.T, url string, cfg CacheConfig, subscribe bool) *replica {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	r := &replica{store: New(pool), reg: prometheus.NewRegistry()}
	cfg.Registry = r.reg
	if testing.Verbose() {
		cfg.Logger = slog.Default()
	}
	r.cache, err = NewCache(r.store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if subscribe {
		l := pgnotify.New(pool, nil)
		r.cache.Subscribe(l)
		wg.Go(func() { _ = l.Run(ctx) })
	}
	wg.Go(func() { _ = r.cache.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	testutil.Eventually(t, 0, "cache ready", func() bool { return r.cache.Ready() == nil })
	return r
}

func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			}
		}
	}
	return sum
}

func deployment(replicas int64) *evaluator.Request {
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	return &evaluator.Request{UID: "1", Kind: gvk, RequestKind: gvk, Resource: gvr, RequestResource: gvr,
		Name: "web", Namespace: "default", Operation: admissionregistrationv1.Create,
		Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "default"},
			"spec":     map[string]any{"replicas": replicas}}}
}

func allowed(t *testing.T, s *Snapshot, replicas int64) bool {
	t.Helper()
	return s.Compiled.Evaluate(context.Background(), evaluator.Validating, deployment(replicas), evaluator.WithNamespaces(evaluator.NamespaceMap{})).Allowed
}

func TestMissLoadsOnceThenHits(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	r := startReplica(t, url, CacheConfig{}, false)
	tenant := pgtest.InsertTenant(t, r.store.pool)
	for _, d := range [][]byte{vap(3), []byte(bindingYAML)} {
		if _, err := r.store.Apply(ctx, tenant, "alice", d); err != nil {
			t.Fatal(err)
		}
	}
	// 50 requests arrive together for a cold tenant: one load.
	var wg sync.WaitGroup
	snaps := make([]*Snapshot, 50)
	errs := make([]error, 50)
	for i := range snaps {
		wg.Go(func() { snaps[i], errs[i] = r.cache.Snapshot(ctx, tenant) })
	}
	wg.Wait()
	for i := range snaps {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		if snaps[i] != snaps[0] {
			t.Fatalf("request %d got a different snapshot", i)
		}
	}
	if n := counter(t, r.reg, "portcullis_policy_cache_loads_total"); n != 1 {
		t.Fatalf("loads = %v, want 1", n)
	}
	s := snaps[0]
	if s.Version != 2 || s.TenantID != tenant || s.Compiled.Stats().Policies != 1 || s.Compiled.Stats().Bindings != 1 {
		t.Fatalf("snapshot: version %d tenant %d stats %+v", s.Version, s.TenantID, s.Compiled.Stats())
	}
	if allowed(t, s, 5) || !allowed(t, s, 2) {
		t.Fatal("the snapshot does not enforce max-replicas 3")
	}
	again, err := r.cache.Snapshot(ctx, tenant)
	if err != nil || again != s {
		t.Fatalf("second call: %v %v", again, err)
	}
	if hits := counter(t, r.reg, "portcullis_policy_cache_hits_total"); hits < 1 {
		t.Fatalf("hits = %v", hits)
	}
	// A tenant without policies has an empty snapshot at version 0: that is
	// its real policy set, not a failure.
	empty := pgtest.InsertTenant(t, r.store.pool)
	es, err := r.cache.Snapshot(ctx, empty)
	if err != nil || es.Version != 0 || !allowed(t, es, 100) {
		t.Fatalf("empty tenant: %+v %v", es, err)
	}
}

// A write on replica A is enforced by replica B, through LISTEN/NOTIFY.
func TestWritePropagatesToOtherReplica(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	a := startReplica(t, url, CacheConfig{ResyncInterval: 30 * time.Second}, true)
	b := startReplica(t, url, CacheConfig{ResyncInterval: 30 * time.Second}, true)
	tenant := pgtest.InsertTenant(t, a.store.pool)
	for _, d := range [][]byte{vap(3), []byte(bindingYAML)} {
		if _, err := a.store.Apply(ctx, tenant, "alice", d); err != nil {
			t.Fatal(err)
		}
	}
	// Each listener resyncs once when it connects; count from there.
	testutil.Eventually(t, 0, "B's listener to connect", func() bool {
		return counter(t, b.reg, "portcullis_policy_cache_resyncs_total") >= 1
	})
	resyncs := counter(t, b.reg, "portcullis_policy_cache_resyncs_total")
	sb, err := b.cache.Snapshot(ctx, tenant)
	if err != nil || allowed(t, sb, 5) {
		t.Fatalf("B before the change: allowed 5 replicas (err %v)", err)
	}
	if _, err := a.store.Apply(ctx, tenant, "alice", vap(10)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 0, "B to enforce the new version", func() bool {
		s, err := b.cache.Snapshot(ctx, tenant)
		return err == nil && s.Version == 3 && allowed(t, s, 5)
	})
	// A delete propagates the same way: no policy, everything allowed.
	if _, err := a.store.Delete(ctx, tenant, "alice", refVAP, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 0, "B to drop the deleted policy", func() bool {
		s, err := b.cache.Snapshot(ctx, tenant)
		return err == nil && s.Version == 4 && allowed(t, s, 50)
	})
	if n := counter(t, b.reg, "portcullis_policy_cache_resyncs_total"); n != resyncs {
		t.Fatalf("resyncs = %v; the change should have come by notification", n)
	}
}

// Without notifications (lost, or a listener that is down), the periodic
// resync still brings the new version.
func TestLostNotificationHealedByResync(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	r := startReplica(t, url, CacheConfig{ResyncInterval: 200 * time.Millisecond}, false)
	tenant := pgtest.InsertTenant(t, r.store.pool)
	if _, err := r.store.Apply(ctx, tenant, "alice", vap(3)); err != nil {
		t.Fatal(err)
	}
	s, err := r.cache.Snapshot(ctx, tenant)
	if err != nil || s.Version != 1 {
		t.Fatalf("%+v %v", s, err)
	}
	if _, err := r.store.Apply(ctx, tenant, "alice", vap(4)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 0, "resync to load version 2", func() bool {
		s, err := r.cache.Snapshot(ctx, tenant)
		return err == nil && s.Version == 2
	})
}

func TestServesStaleDuringOutageAndColdIs503(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts the database")
	}
	ctx := context.Background()
	url := pgtest.URL(t)
	r := startReplica(t, url, CacheConfig{ResyncInterval: 200 * time.Millisecond, LoadTimeout: time.Second}, true)
	warm, cold := pgtest.InsertTenant(t, r.store.pool), pgtest.InsertTenant(t, r.store.pool)
	for _, d := range [][]byte{vap(3), []byte(bindingYAML)} {
		if _, err := r.store.Apply(ctx, warm, "alice", d); err != nil {
			t.Fatal(err)
		}
	}
	before, err := r.cache.Snapshot(ctx, warm)
	if err != nil {
		t.Fatal(err)
	}

	pgtest.StopServer(t)
	restarted := false
	defer func() {
		if !restarted {
			pgtest.StartServer(t)
		}
	}()
	testutil.Eventually(t, 0, "the cache to notice the outage", func() bool { return r.cache.Staleness() > 0 })
	for i := range 20 {
		s, err := r.cache.Snapshot(ctx, warm)
		if err != nil || s != before {
			t.Fatalf("warm request %d during outage: %v", i, err)
		}
		if allowed(t, s, 5) {
			t.Fatal("stale snapshot stopped enforcing")
		}
	}
	if n := counter(t, r.reg, "portcullis_policy_cache_stale_served_total"); n < 20 {
		t.Fatalf("stale_served = %v", n)
	}
	if st := counter(t, r.reg, "portcullis_policy_cache_staleness_seconds"); st <= 0 {
		t.Fatalf("staleness gauge = %v", st)
	}
	if err := r.cache.Ready(); err != nil {
		t.Fatalf("a warm replica became unready: %v", err)
	}
	// A tenant with no snapshot is refused, never served an empty set.
	for range 3 {
		_, err = r.cache.Snapshot(ctx, cold)
		var e *fault.Error
		if !errors.As(err, &e) || e.Code != fault.Unavailable || !errors.Is(err, ErrColdUnavailable) {
			t.Fatalf("cold tenant during outage: %v", err)
		}
		if fault.Status(err).Code != 503 {
			t.Fatalf("status = %d", fault.Status(err).Code)
		}
	}
	if n := counter(t, r.reg, "portcullis_policy_cache_cold_unavailable_total"); n != 3 {
		t.Fatalf("cold_unavailable = %v, want 3", n)
	}

	pgtest.StartServer(t)
	restarted = true
	testutil.Eventually(t, 0, "the cache to reach the database again", func() bool { return r.cache.Staleness() == 0 })
	if _, err := r.cache.Snapshot(ctx, cold); err != nil {
		t.Fatalf("cold tenant after the outage: %v", err)
	}
	// Changes after the outage arrive again (the listener reconnected).
	if _, err := r.store.Apply(ctx, warm, "alice", vap(10)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 0, "the change after the outage", func() bool {
		s, err := r.cache.Snapshot(ctx, warm)
		return err == nil && s.Version == 3 && allowed(t, s, 5)
	})
}

func TestEvictsByTenantsAndBytes(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	tests := []struct {
		name      string
		cfg       CacheConfig
		wantCount int
	}{
		{"tenant bound", CacheConfig{MaxTenants: 2}, 2},
		{"byte bound", CacheConfig{MaxBytes: 1}, 1}, // always keeps the newest
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startReplica(t, url, tt.cfg, false)
			var tenants []int64
			for range 3 {
				id := pgtest.InsertTenant(t, r.store.pool)
				if _, err := r.store.Apply(ctx, id, "alice", vap(3)); err != nil {
					t.Fatal(err)
				}
				if _, err := r.cache.Snapshot(ctx, id); err != nil {
					t.Fatal(err)
				}
				tenants = append(tenants, id)
			}
			n, b := r.cache.Len()
			if n != tt.wantCount || b <= 0 {
				t.Fatalf("cached %d tenants, %d bytes; want %d tenants", n, b, tt.wantCount)
			}
			if _, ok := r.cache.lru.Peek(tenants[0]); ok {
				t.Fatal("the least recently used tenant was kept")
			}
			if _, ok := r.cache.lru.Peek(tenants[2]); !ok {
				t.Fatal("the most recent tenant was evicted")
			}
			if ev := counter(t, r.reg, "portcullis_policy_cache_evictions_total"); int(ev) != 3-tt.wantCount {
				t.Fatalf("evictions = %v", ev)
			}
		})
	}
}

// Tenants served by one replica are warmed up by the next one to start.
func TestWarmUpLoadsRecentlyServedTenants(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	first := startReplica(t, url, CacheConfig{ResyncInterval: 100 * time.Millisecond}, false)
	served, idle := pgtest.InsertTenant(t, first.store.pool), pgtest.InsertTenant(t, first.store.pool)
	for _, id := range []int64{served, idle} {
		if _, err := first.store.Apply(ctx, id, "alice", vap(3)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := first.cache.Snapshot(ctx, served); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 0, "the served tenant to be recorded", func() bool {
		ids, err := first.store.RecentTenantsAll(ctx, time.Hour, 10, nil, nil)
		return err == nil && len(ids) == 1 && ids[0] == served
	})
	second := startReplica(t, url, CacheConfig{}, false)
	if _, ok := second.cache.lru.Peek(served); !ok {
		t.Fatal("the served tenant was not warmed up")
	}
	if _, ok := second.cache.lru.Peek(idle); ok {
		t.Fatal("a tenant never served was warmed up")
	}
	if n := counter(t, second.reg, "portcullis_policy_cache_hits_total"); n != 0 {
		t.Fatalf("hits = %v before any request", n)
	}

	// A deployment that answers for some tenants only warms up no other.
	var servedName string
	if err := first.store.pool.QueryRow(ctx, `SELECT name FROM tenants WHERE id = $1`, served).Scan(&servedName); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfg  CacheConfig
		warm bool
	}{
		{CacheConfig{Tenants: []string{servedName}}, true},
		{CacheConfig{Tenants: []string{"another-tenant"}}, false},
		{CacheConfig{ExcludeTenants: []string{servedName}}, false},
		{CacheConfig{ExcludeTenants: []string{"another-tenant"}}, true},
	} {
		r := startReplica(t, url, tc.cfg, false)
		if _, ok := r.cache.lru.Peek(served); ok != tc.warm {
			t.Errorf("tenants %v, excluded %v: served tenant warmed up %v, want %v", tc.cfg.Tenants, tc.cfg.ExcludeTenants, ok, tc.warm)
		}
	}
}

func TestNotReadyUntilDatabaseReached(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	c, err := NewCache(New(pool), CacheConfig{LoadTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Run(ctx); close(done) }()
	testutil.Eventually(t, 0, "a failed attempt to reach the database", func() bool { return c.lastFailure.Load() != 0 })
	if c.Ready() == nil {
		t.Fatal("ready without ever reaching the database")
	}
	_, err = c.Snapshot(context.Background(), 1)
	if fault.ErrorCode(err) != fault.Unavailable {
		t.Fatalf("cold request = %v, want unavailable", err)
	}
	cancel()
	<-done
}

// An outage shows in Staleness as soon as the notification connection
// drops, not at the next periodic resync; and a change made as the database
// returns is served within a second, however long the outage was.
func TestOutageSeenAtOnceAndChangeAfterItWithinASecond(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts the database")
	}
	ctx := context.Background()
	url := pgtest.URL(t)
	r := startReplica(t, url, CacheConfig{ResyncInterval: 30 * time.Second, LoadTimeout: time.Second}, true)
	tenant := pgtest.InsertTenant(t, r.store.pool)
	for _, d := range [][]byte{vap(3), []byte(bindingYAML)} {
		if _, err := r.store.Apply(ctx, tenant, "alice", d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.cache.Snapshot(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	// The listener connects on its own; its first connect resyncs.
	testutil.Eventually(t, 0, "the notification listener to connect", func() bool {
		return counter(t, r.reg, "portcullis_policy_cache_resyncs_total") >= 1
	})

	pgtest.StopServer(t)
	restarted := false
	defer func() {
		if !restarted {
			pgtest.StartServer(t)
		}
	}()
	// Within seconds, not the 30s of the periodic resync (5s rather than
	// 1s leaves room for -race beside make test's other packages on two
	// cores, where 2s once ran out).
	testutil.Eventually(t, 5*time.Second, "staleness above 0 soon after the outage", func() bool { return r.cache.Staleness() > 0 })
	// Five failed resyncs: the cache's own next retry is 1.6s away, so only
	// the listener's reconnect can bring the change within a second.
	testutil.Eventually(t, 0, "five failed resyncs", func() bool {
		var m dto.Metric
		if err := r.cache.m.resyncs.WithLabelValues("error").Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetCounter().GetValue() >= 5
	})
	pgtest.StartServer(t)
	restarted = true
	back := time.Now()
	if _, err := r.store.Apply(ctx, tenant, "alice", vap(10)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Second, "the change made as the database returned", func() bool {
		s, err := r.cache.Snapshot(ctx, tenant)
		return err == nil && allowed(t, s, 5)
	})
	t.Logf("served %v after the database returned", time.Since(back).Round(time.Millisecond))
}

// Current never serves an older snapshot than the database's version: the
// admin API evaluates with it right after an apply, before the change's
// notification has reached the cache (here it never does).
func TestCurrentReadsItsWrites(t *testing.T) {
	ctx := context.Background()
	r := startReplica(t, pgtest.URL(t), CacheConfig{ResyncInterval: 30 * time.Second}, false)
	tenant := pgtest.InsertTenant(t, r.store.pool)
	for _, d := range baselineDocs(t)[:2] {
		if _, err := r.store.Apply(ctx, tenant, "alice", d); err != nil {
			t.Fatal(err)
		}
	}
	before, err := r.cache.Snapshot(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range baselineDocs(t)[2:4] {
		if _, err := r.store.Apply(ctx, tenant, "alice", d); err != nil {
			t.Fatal(err)
		}
	}
	if s, _ := r.cache.Snapshot(ctx, tenant); s.Version != before.Version {
		t.Fatalf("Snapshot moved to %d without a notification; the test needs it stale", s.Version)
	}
	head, err := r.store.TenantVersion(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := r.cache.Current(ctx, tenant)
	if err != nil || cur.Version != head || head <= before.Version {
		t.Fatalf("Current = version %d (%v), want the head %d (the cache had %d)", cur.Version, err, head, before.Version)
	}
	if s, _ := r.cache.Snapshot(ctx, tenant); s.Version != head {
		t.Fatalf("the fresh snapshot was not installed: Snapshot = %d", s.Version)
	}
}
