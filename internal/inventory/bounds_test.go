package inventory

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

// Issue 30, finding 3: a stored Namespace is bounded in size. managedFields
// and kubectl's last-applied copy are stripped; annotations over the
// apiserver's 256 KiB are refused with a 422 naming the item, and a
// learned one is dropped and counted.
func TestNamespaceSizeBound(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := New(pool)
	tenant := pgtest.InsertTenant(t, pool)
	cluster := pgtest.InsertCluster(t, pool, tenant)

	applied := ns("applied", nil)
	applied.Annotations[lastAppliedAnnotation] = strings.Repeat("x", 200<<10)
	if err := s.ReplaceNamespaces(ctx, tenant, cluster, []*corev1.Namespace{applied}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetNamespace(ctx, tenant, cluster, "applied")
	if err != nil || got.Annotations[lastAppliedAnnotation] != "" || got.Annotations["owner"] != "team-a" || got.ManagedFields != nil {
		t.Fatalf("stored %v, %v; want no last-applied copy nor managedFields, the other annotations kept", got.Annotations, err)
	}

	huge := ns("huge", nil)
	huge.Annotations["blob"] = strings.Repeat("x", 4<<20)
	err = s.ReplaceNamespaces(ctx, tenant, cluster, []*corev1.Namespace{ns("ok", nil), huge})
	if fault.ErrorCode(err) != fault.Invalid || !strings.Contains(err.Error(), "items[1].metadata.annotations") {
		t.Fatalf("a 4 MiB annotation: %v; want 422 naming items[1].metadata.annotations", err)
	}
	if _, err := s.Sync(ctx, tenant, cluster, SyncPush{Namespaces: []*corev1.Namespace{huge}}); fault.ErrorCode(err) != fault.Invalid ||
		!strings.Contains(err.Error(), "namespaces[0].metadata.annotations") {
		t.Fatalf("a 4 MiB annotation in a sync push: %v", err)
	}
	if err := s.Observe(ctx, tenant, cluster, nil, huge); fault.ErrorCode(err) != fault.Invalid {
		t.Fatalf("a 4 MiB proposal: %v", err)
	}

	reg := prometheus.NewRegistry()
	n, err := NewCache(s, Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := n.Lookup(ctx, tenant, cluster)
	if err != nil {
		t.Fatal(err)
	}
	n.Observe(tenant, cluster, huge, huge)
	if _, ok := inv.ProvisionalNamespace("huge"); ok {
		t.Fatal("a 4 MiB namespace was learned")
	}
	if _, ok := n.queue.next(); ok {
		t.Fatal("a 4 MiB namespace was queued for the database")
	}
	if v := testutil.ToFloat64(n.refused.WithLabelValues("invalid")); v != 1 {
		t.Fatalf("refused{invalid} = %v, want 1", v)
	}
}

// Issue 30, finding 3: the number of namespaces and CRDs per cluster is
// bounded (defaults, or the tenant's override): an upload or sync push
// over it is a 422, a learned namespace over it is dropped and counted.
func TestNamespaceAndCRDCountBounds(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := New(pool)
	tenant := pgtest.InsertTenant(t, pool)
	cluster := pgtest.InsertCluster(t, pool, tenant)
	if b, err := s.Bounds(ctx, tenant); err != nil || b != (Bounds{DefaultMaxNamespaces, DefaultMaxCRDs}) {
		t.Fatalf("default bounds %+v, %v", b, err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO tenant_limits (tenant_id, max_namespaces_per_cluster, max_crds_per_cluster) VALUES ($1, 3, 1)`, tenant); err != nil {
		t.Fatal(err)
	}
	many := func(prefix string, k int) []*corev1.Namespace {
		var out []*corev1.Namespace
		for i := range k {
			out = append(out, ns(fmt.Sprintf("%s-%d", prefix, i), nil))
		}
		return out
	}
	if err := s.ReplaceNamespaces(ctx, tenant, cluster, many("a", 4)); fault.ErrorCode(err) != fault.Invalid || !strings.Contains(err.Error(), "over its bound of 3") {
		t.Fatalf("an upload of 4 over a bound of 3: %v", err)
	}
	if _, err := s.Sync(ctx, tenant, cluster, SyncPush{Full: true, Namespaces: many("a", 4)}); fault.ErrorCode(err) != fault.Invalid {
		t.Fatalf("a full push of 4 over a bound of 3: %v", err)
	}
	if err := s.ReplaceNamespaces(ctx, tenant, cluster, many("a", 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.Observe(ctx, tenant, cluster, nil, ns("p", nil)); err != nil {
		t.Fatal(err)
	}
	// Three names now (two committed, one proposed).
	if err := s.Observe(ctx, tenant, cluster, nil, ns("q", nil)); err != errOverBound {
		t.Fatalf("a fourth learned namespace: %v", err)
	}
	if err := s.Observe(ctx, tenant, cluster, ns("a-0", map[string]string{"x": "y"}), nil); err != nil {
		t.Fatalf("a known namespace at the bound: %v", err)
	}
	if _, err := s.Sync(ctx, tenant, cluster, SyncPush{Namespaces: many("b", 1)}); fault.ErrorCode(err) != fault.Invalid || !strings.Contains(err.Error(), "namespaces") {
		t.Fatalf("a push that makes 4: %v", err)
	}
	if _, err := s.GetNamespace(ctx, tenant, cluster, "b-0"); fault.ErrorCode(err) != fault.NotFound {
		t.Fatalf("the refused push was stored: %v", err)
	}

	crd := func(plural string) *CRD {
		c, err := DecodeCRD(fmt.Appendf(nil, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"%s.example.com"},
			"spec":{"group":"example.com","names":{"kind":"W","plural":"%s"},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true}]}}`, plural, plural))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if err := s.ReplaceCRDs(ctx, tenant, cluster, []*CRD{crd("widgets"), crd("gadgets")}); fault.ErrorCode(err) != fault.Invalid || !strings.Contains(err.Error(), "over its bound of 1") {
		t.Fatalf("2 CRDs over a bound of 1: %v", err)
	}
	if err := s.ReplaceCRDs(ctx, tenant, cluster, []*CRD{crd("widgets")}); err != nil {
		t.Fatal(err)
	}

	// The cache drops a new learned namespace at the bound, at once.
	n, err := NewCache(s, Config{Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := n.Lookup(ctx, tenant, cluster)
	if err != nil {
		t.Fatal(err)
	}
	n.Observe(tenant, cluster, nil, ns("r", nil))
	if _, ok := inv.ProvisionalNamespace("r"); ok {
		t.Fatal("a namespace over the bound was learned in memory")
	}
	if v := testutil.ToFloat64(n.refused.WithLabelValues("over_bound")); v != 1 {
		t.Fatalf("refused{over_bound} = %v, want 1", v)
	}
	n.Observe(tenant, cluster, nil, ns("p", map[string]string{"env": "dev"}))
	if p, ok := inv.ProvisionalNamespace("p"); !ok || p.Labels["env"] != "dev" {
		t.Fatal("a known namespace at the bound was not learned")
	}
}

// Issue 30, finding 8: an older oldObject (by metadata.resourceVersion)
// never overwrites a newer committed object, nor deletes the proposal made
// since; in the database and in memory.
func TestStaleOldObjectChangesNothing(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := New(pool)
	tenant := pgtest.InsertTenant(t, pool)
	cluster := pgtest.InsertCluster(t, pool, tenant)
	at := func(rv string, labels map[string]string) *corev1.Namespace {
		n := ns("team-a", labels)
		n.ResourceVersion = rv
		return n
	}
	if err := s.Observe(ctx, tenant, cluster, at("20", nil), at("20", map[string]string{"env": "prod"})); err != nil {
		t.Fatal(err)
	}
	if err := s.Observe(ctx, tenant, cluster, at("9", map[string]string{"exempt": "true"}), nil); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetNamespace(ctx, tenant, cluster, "team-a")
	if err != nil || got.ResourceVersion != "20" || got.Labels["exempt"] != "" {
		t.Fatalf("committed after a stale oldObject: %v, %v", got, err)
	}
	if _, err := s.GetProvisional(ctx, tenant, cluster, "team-a"); err != nil {
		t.Fatalf("a stale oldObject deleted the proposal: %v", err)
	}
	// A newer one does replace it.
	if err := s.Observe(ctx, tenant, cluster, at("21", map[string]string{"env": "prod"}), nil); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetNamespace(ctx, tenant, cluster, "team-a"); err != nil || got.ResourceVersion != "21" {
		t.Fatalf("a newer oldObject: %v, %v", got, err)
	}

	n, err := NewCache(s, Config{Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := n.Lookup(ctx, tenant, cluster)
	if err != nil {
		t.Fatal(err)
	}
	n.Observe(tenant, cluster, at("21", nil), at("21", map[string]string{"env": "dev"}))
	n.Observe(tenant, cluster, at("10", map[string]string{"exempt": "true"}), nil)
	if c, _ := inv.Namespace("team-a"); c.ResourceVersion != "21" {
		t.Fatalf("in memory, a stale oldObject replaced resourceVersion 21 with %s", c.ResourceVersion)
	}
	if _, ok := inv.ProvisionalNamespace("team-a"); !ok {
		t.Fatal("in memory, a stale oldObject dropped the proposal")
	}
}

// Issue 30, finding 11: an incremental push's deleted names are checked: a
// malformed one is a 422 naming it, and nothing is deleted.
func TestSyncDeletedNamesAreChecked(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := New(pool)
	tenant := pgtest.InsertTenant(t, pool)
	cluster := pgtest.InsertCluster(t, pool, tenant)
	if err := s.ReplaceNamespaces(ctx, tenant, cluster, []*corev1.Namespace{ns("team-a", nil)}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"Team-A", "a/b", strings.Repeat("a", 64), "x%00"} {
		_, err := s.Sync(ctx, tenant, cluster, SyncPush{Deleted: []string{"team-a", bad}})
		if fault.ErrorCode(err) != fault.Invalid || !strings.Contains(err.Error(), "deleted[1]") {
			t.Fatalf("deleting %q: %v; want 422 naming deleted[1]", bad, err)
		}
	}
	if _, err := s.GetNamespace(ctx, tenant, cluster, "team-a"); err != nil {
		t.Fatalf("a refused push deleted team-a: %v", err)
	}
}
