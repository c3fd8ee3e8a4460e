package inventory

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// The queue takes the clusters in turn, bounds each cluster's writes on
// its own, and coalesces refreshes, which it never drops.
func TestWorkQueueIsPerCluster(t *testing.T) {
	q := newWorkQueue(3)
	a, b := clusterKey{1, 1}, clusterKey{2, 2}
	nop := func(context.Context) error { return nil }
	for i := range 5 {
		if ok := q.write(a, nop); ok != (i < 3) {
			t.Fatalf("write %d of a: %v", i, ok)
		}
	}
	if !q.write(b, nop) {
		t.Fatal("a's full queue refused b's write")
	}
	for i := range 10 {
		q.refresh(b, fmt.Sprintf("ns-%d", i%2))
	}
	var order []string
	for {
		it, ok := q.next()
		if !ok {
			break
		}
		switch {
		case it.write != nil:
			order = append(order, fmt.Sprintf("%d:write", it.key.tenant))
		default:
			order = append(order, fmt.Sprintf("%d:refresh%d", it.key.tenant, len(it.names)))
		}
	}
	want := "[1:write 2:refresh2 1:write 2:write 1:write]"
	if got := fmt.Sprint(order); got != want {
		t.Fatalf("order %s, want %s", got, want)
	}
	for i := range 5 {
		q.refresh(a, fmt.Sprintf("ns-%d", i))
	}
	if it, _ := q.next(); !it.reload || it.names != nil {
		t.Fatalf("more names than the bound: %+v, want one whole reload", it)
	}
	if len(q.work) != 0 || len(q.ready) != 0 {
		t.Fatalf("left: %v %v", q.work, q.ready)
	}
}

// Issue 30, finding 5: one tenant's flood of learned writes must not make
// a replica lose another tenant's inventory change. Before, both shared one
// queue that dropped whatever came once it was full.
func TestOneTenantsFloodDoesNotDropAnothersChange(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := New(pool)
	noisy, quiet := pgtest.InsertTenant(t, pool), pgtest.InsertTenant(t, pool)
	noisyCluster, quietCluster := pgtest.InsertCluster(t, pool, noisy), pgtest.InsertCluster(t, pool, quiet)
	n, err := NewCache(s, Config{Registry: prometheus.NewRegistry(), QueueSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := n.Lookup(ctx, quiet, quietCluster)
	if err != nil {
		t.Fatal(err)
	}
	// Not running yet: the flood fills the noisy cluster's queue.
	for i := range 50 {
		n.Observe(noisy, noisyCluster, nil, ns(fmt.Sprintf("flood-%d", i), nil))
	}
	// Another replica changes the quiet tenant's inventory; this replica
	// hears of it.
	if err := s.Observe(ctx, quiet, quietCluster, ns("team-q", map[string]string{"exempt": "false"}), nil); err != nil {
		t.Fatal(err)
	}
	n.notified(fmt.Sprintf("%d:%d:team-q", quiet, quietCluster))
	if d := promtestutil.ToFloat64(n.dropped); d != 40 {
		t.Fatalf("dropped %v, want the noisy cluster's 40 over its bound", d)
	}
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = n.Run(rctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	testutil.Eventually(t, 0, "the quiet tenant's change to reach this replica", func() bool {
		_, ok := inv.Namespace("team-q")
		return ok
	})
}

// Issue 30, finding 5: a change whose notification was lost reaches every
// replica within the resync interval.
func TestResyncRepairsALostNotification(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := New(pool)
	tenant := pgtest.InsertTenant(t, pool)
	cluster := pgtest.InsertCluster(t, pool, tenant)
	n, err := NewCache(s, Config{Registry: prometheus.NewRegistry(), ResyncInterval: 50 * time.Millisecond})
	if err != nil {
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
	// This cache listens to nothing: every notification is lost.
	if err := s.ReplaceNamespaces(ctx, tenant, cluster, []*corev1.Namespace{ns("late", nil)}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 0, "the resync to load the change", func() bool {
		_, ok := inv.Namespace("late")
		return ok
	})
}
