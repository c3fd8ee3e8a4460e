package inventory

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// A provisional namespace that nothing proposed again or confirmed within
// the TTL is dropped, in every tenant; fresher ones and committed
// namespaces stay.
func TestExpireAllProvisional(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := New(pool)
	tenantA, tenantB := pgtest.InsertTenant(t, pool), pgtest.InsertTenant(t, pool)
	clusterA, clusterB := pgtest.InsertCluster(t, pool, tenantA), pgtest.InsertCluster(t, pool, tenantB)
	for _, o := range []struct {
		tenant, cluster int64
		name            string
	}{{tenantA, clusterA, "old-a"}, {tenantA, clusterA, "fresh-a"}, {tenantB, clusterB, "old-b"}} {
		if err := s.Observe(ctx, o.tenant, o.cluster, nil, ns(o.name, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Observe(ctx, tenantA, clusterA, ns("kept", nil), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE cluster_namespaces_provisional SET updated_at = now() - interval '25 hours' WHERE name LIKE 'old-%'`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE cluster_namespaces SET updated_at = now() - interval '25 hours'`); err != nil {
		t.Fatal(err)
	}

	keys, err := s.ExpireAllProvisional(ctx, DefaultProvisionalTTL)
	if err != nil || !slices.Equal(keys, []clusterKey{{tenantA, clusterA}, {tenantB, clusterB}}) {
		t.Fatalf("expired clusters = %v, %v", keys, err)
	}
	for _, gone := range []struct {
		tenant, cluster int64
		name            string
	}{{tenantA, clusterA, "old-a"}, {tenantB, clusterB, "old-b"}} {
		if _, err := s.GetProvisional(ctx, gone.tenant, gone.cluster, gone.name); fault.ErrorCode(err) != fault.NotFound {
			t.Fatalf("%s after the expiry: %v", gone.name, err)
		}
	}
	if _, err := s.GetProvisional(ctx, tenantA, clusterA, "fresh-a"); err != nil {
		t.Fatalf("a fresh proposal expired: %v", err)
	}
	if _, err := s.GetNamespace(ctx, tenantA, clusterA, "kept"); err != nil {
		t.Fatalf("a committed namespace expired: %v", err)
	}
	if keys, err := s.ExpireAllProvisional(ctx, DefaultProvisionalTTL); err != nil || len(keys) != 0 {
		t.Fatalf("a second expiry = %v, %v", keys, err)
	}
}

// The cache's periodic work expires provisional namespaces, in memory too.
func TestCacheExpiresProvisional(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := New(pool)
	const ttl = time.Second
	if every := provisionalExpiryEvery(DefaultProvisionalTTL); every != 10*time.Minute {
		t.Fatalf("expiry every %v with the default TTL", every)
	}
	n, err := NewCache(s, Config{Registry: prometheus.NewRegistry(), ProvisionalTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	tenant := pgtest.InsertTenant(t, pool)
	cluster := pgtest.InsertCluster(t, pool, tenant)
	if err := s.ReplaceNamespaces(ctx, tenant, cluster, []*corev1.Namespace{ns("prod", nil)}); err != nil {
		t.Fatal(err)
	}
	inv, err := n.Lookup(ctx, tenant, cluster)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = n.Run(rctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	// Issue 30, finding 1: an UPDATE of prod that removes its exemption
	// label is a proposal over a committed object; expiry never drops it,
	// or the older, exempt labels would apply again.
	n.Observe(tenant, cluster, ns("prod", map[string]string{"exempt": "true"}), ns("prod", nil))
	n.Observe(tenant, cluster, nil, ns("rejected-elsewhere", map[string]string{"env": "dev"}))
	if _, ok := inv.ProvisionalNamespace("rejected-elsewhere"); !ok {
		t.Fatal("the proposal is not visible at once")
	}
	testutil.Eventually(t, 0, "the proposal to be written", func() bool {
		_, err := s.GetProvisional(ctx, tenant, cluster, "rejected-elsewhere")
		return err == nil
	})
	testutil.Eventually(t, 0, "the proposal to expire", func() bool {
		_, ok := inv.ProvisionalNamespace("rejected-elsewhere")
		return !ok
	})
	if _, err := s.GetProvisional(ctx, tenant, cluster, "rejected-elsewhere"); fault.ErrorCode(err) != fault.NotFound {
		t.Fatalf("the expired proposal in the database: %v", err)
	}
	if _, ok := inv.Namespace("prod"); !ok {
		t.Fatal("a committed namespace went with the expiry")
	}
	if _, ok := inv.ProvisionalNamespace("prod"); !ok {
		t.Fatal("the expiry dropped a proposal over a committed namespace: its older labels apply again")
	}
	if _, err := s.GetProvisional(ctx, tenant, cluster, "prod"); err != nil {
		t.Fatalf("the proposal over a committed namespace in the database: %v", err)
	}
}
