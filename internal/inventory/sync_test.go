package inventory

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// The sync is committed state, drops what is provisional, and while its
// lease runs turns learning from traffic off, on every replica.
func TestSyncTurnsLearningOff(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	a, b := startCache(t, url), startCache(t, url)
	s := a.store
	tenant := pgtest.InsertTenant(t, s.pool)
	cluster := pgtest.InsertCluster(t, s.pool, tenant)
	invB, err := b.Lookup(ctx, tenant, cluster)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Observe(ctx, tenant, cluster, nil, ns("team-a", map[string]string{"exempt": "true"})); err != nil {
		t.Fatal(err)
	}
	if invB.Synced(time.Now()) {
		t.Fatal("synced before any push")
	}

	pushed, err := s.Sync(ctx, tenant, cluster, SyncPush{Full: true, Namespaces: []*corev1.Namespace{ns("team-a", nil), ns("team-b", nil)}})
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(pushed) > time.Minute {
		t.Fatalf("pushed at %v", pushed)
	}
	testutil.Eventually(t, 0, "B to take the sync", func() bool {
		_, prov := invB.ProvisionalNamespace("team-a")
		return invB.Synced(time.Now()) && invB.NamespaceCount() == 2 && !prov
	})
	list, err := s.ListNamespaces(ctx, tenant, cluster)
	if err != nil || len(list) != 2 {
		t.Fatalf("after the full push: %v %v", list, err)
	}

	// Traffic teaches nothing now, in memory or in the database.
	b.Observe(tenant, cluster, ns("team-a", map[string]string{"x": "y"}), ns("team-a", map[string]string{"exempt": "true"}))
	if _, prov := invB.ProvisionalNamespace("team-a"); prov {
		t.Fatal("a synced cluster learned from traffic in memory")
	}
	if err := s.Observe(ctx, tenant, cluster, ns("team-c", nil), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetNamespace(ctx, tenant, cluster, "team-c"); fault.ErrorCode(err) != fault.NotFound {
		t.Fatalf("a synced cluster learned from traffic in the database: %v", err)
	}

	// Watch events: one added, one deleted.
	if _, err := s.Sync(ctx, tenant, cluster, SyncPush{Namespaces: []*corev1.Namespace{ns("team-d", map[string]string{"env": "dev"})}, Deleted: []string{"team-b"}}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 0, "B to take the watch events", func() bool {
		_, d := invB.Namespace("team-d")
		_, gone := invB.Namespace("team-b")
		return d && !gone
	})
	if _, err := s.Sync(ctx, tenant, cluster, SyncPush{Full: true, Deleted: []string{"x"}}); fault.ErrorCode(err) != fault.Invalid {
		t.Fatalf("a full push deleting by name: %v", err)
	}

	// A lease that ran out turns learning back on.
	if _, err := s.pool.Exec(ctx, `UPDATE cluster_inventory_sync SET pushed_at = now() - interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
	if err := s.Observe(ctx, tenant, cluster, ns("team-c", nil), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetNamespace(ctx, tenant, cluster, "team-c"); err != nil {
		t.Fatalf("learning did not resume after the lease: %v", err)
	}
}
