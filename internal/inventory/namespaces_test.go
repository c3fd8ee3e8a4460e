package inventory

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgnotify"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

func ns(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, UID: "uid-" + "x",
			Annotations:       map[string]string{"owner": "team-a"},
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec:   corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
}

func TestNamespaceInventoryStore(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := New(pool)
	tenant := pgtest.InsertTenant(t, pool)
	cluster, other := pgtest.InsertCluster(t, pool, tenant), pgtest.InsertCluster(t, pool, tenant)

	if err := s.ReplaceNamespaces(ctx, tenant, cluster, []*corev1.Namespace{ns("prod", map[string]string{"env": "prod"}), ns("dev", nil)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Observe(ctx, tenant, cluster, ns("staging", map[string]string{"env": "staging"}), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Observe(ctx, tenant, cluster, nil, ns("staging", map[string]string{"env": "staging", "exempt": "true"})); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkNamespaceTerminating(ctx, tenant, cluster, "dev", time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		check func() error
	}{
		{"whole object kept, without managedFields", func() error {
			got, err := s.GetNamespace(ctx, tenant, cluster, "prod")
			if err != nil {
				return err
			}
			if got.Labels["env"] != "prod" || got.Annotations["owner"] != "team-a" || got.UID == "" ||
				got.CreationTimestamp.IsZero() || len(got.Spec.Finalizers) != 1 || got.Status.Phase != corev1.NamespaceActive ||
				got.ManagedFields != nil {
				return errorf("prod = %+v", got)
			}
			return nil
		}},
		{"terminating sets phase and deletionTimestamp", func() error {
			got, err := s.GetNamespace(ctx, tenant, cluster, "dev")
			if err != nil {
				return err
			}
			if got.Status.Phase != corev1.NamespaceTerminating || got.DeletionTimestamp == nil {
				return errorf("dev = %+v", got.ObjectMeta)
			}
			return nil
		}},
		{"terminating an unknown namespace is not found", func() error {
			if err := s.MarkNamespaceTerminating(ctx, tenant, cluster, "nope", time.Now()); fault.ErrorCode(err) != fault.NotFound {
				return errorf("err = %v", err)
			}
			return nil
		}},
		{"clusters do not share inventories", func() error {
			if list, err := s.ListNamespaces(ctx, tenant, other); err != nil || len(list) != 0 {
				return errorf("other cluster: %d, %v", len(list), err)
			}
			return nil
		}},
		{"another tenant cannot write to the cluster", func() error {
			t2 := pgtest.InsertTenant(t, pool)
			if err := s.Observe(ctx, t2, cluster, ns("x", nil), nil); fault.ErrorCode(err) != fault.NotFound {
				return errorf("err = %v", err)
			}
			return nil
		}},
		{"a proposal is kept apart from the committed object", func() error {
			got, err := s.GetNamespace(ctx, tenant, cluster, "staging")
			if err != nil || got.Labels["exempt"] != "" {
				return errorf("committed staging = %v %v", got, err)
			}
			prov, err := s.GetProvisional(ctx, tenant, cluster, "staging")
			if err != nil || prov.Labels["exempt"] != "true" {
				return errorf("provisional staging = %v %v", prov, err)
			}
			return nil
		}},
		{"a later oldObject corrects the proposal", func() error {
			if err := s.Observe(ctx, tenant, cluster, ns("staging", map[string]string{"env": "staging"}), nil); err != nil {
				return err
			}
			if _, err := s.GetProvisional(ctx, tenant, cluster, "staging"); fault.ErrorCode(err) != fault.NotFound {
				return errorf("provisional after the correction: %v", err)
			}
			return nil
		}},
		{"an upload replaces everything", func() error {
			if err := s.Observe(ctx, tenant, cluster, nil, ns("prod", map[string]string{"env": "x"})); err != nil {
				return err
			}
			if err := s.ReplaceNamespaces(ctx, tenant, cluster, []*corev1.Namespace{ns("prod", map[string]string{"env": "prod2"})}); err != nil {
				return err
			}
			list, err := s.ListNamespaces(ctx, tenant, cluster)
			if err != nil || len(list) != 1 || list[0].Labels["env"] != "prod2" {
				return errorf("after upload: %v %v", list, err)
			}
			if provs, err := s.ListProvisional(ctx, tenant, cluster); err != nil || len(provs) != 0 {
				return errorf("provisional after upload: %v %v", provs, err)
			}
			return nil
		}},
		{"an upload with a bad name is refused with its path", func() error {
			err := s.ReplaceNamespaces(ctx, tenant, cluster, []*corev1.Namespace{ns("ok", nil), ns("Bad_Name", nil), ns("ok", nil)})
			e, _ := err.(*fault.Error)
			if e == nil || e.Code != fault.Invalid || len(e.Causes) != 2 || e.Causes[0].Field != "items[1].metadata.name" ||
				e.Causes[1].Field != "items[2].metadata.name" {
				return errorf("err = %#v", err)
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// An observation is visible at once on the replica that made it, reaches
// the database in the background, and then the other replica.
func TestLearnedNamespaceIsImmediateAndPropagates(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	a, b := startCache(t, url), startCache(t, url)
	tenant := pgtest.InsertTenant(t, a.store.pool)
	cluster := pgtest.InsertCluster(t, a.store.pool, tenant)
	if err := a.store.ReplaceNamespaces(ctx, tenant, cluster, []*corev1.Namespace{ns("prod", map[string]string{"env": "prod"})}); err != nil {
		t.Fatal(err)
	}
	invA, err := a.Lookup(ctx, tenant, cluster)
	if err != nil {
		t.Fatal(err)
	}
	invB, err := b.Lookup(ctx, tenant, cluster)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := invB.Namespace("prod"); !ok || got.Labels["env"] != "prod" {
		t.Fatalf("B prod = %v %v", got, ok)
	}

	a.Observe(tenant, cluster, nil, ns("team-x", map[string]string{"env": "dev"}))
	if got, ok := invA.ProvisionalNamespace("team-x"); !ok || got.Labels["env"] != "dev" {
		t.Fatal("the proposed namespace is not visible at once")
	}
	if _, ok := invA.Namespace("team-x"); ok {
		t.Fatal("a proposal was taken as committed")
	}
	testutil.Eventually(t, 0, "B to see team-x proposed", func() bool { _, ok := invB.ProvisionalNamespace("team-x"); return ok })
	a.Observe(tenant, cluster, ns("team-x", map[string]string{"env": "dev"}), nil)
	testutil.Eventually(t, 0, "B to see team-x confirmed", func() bool {
		_, committed := invB.Namespace("team-x")
		_, prov := invB.ProvisionalNamespace("team-x")
		return committed && !prov
	})

	a.LearnNamespaceTerminating(tenant, cluster, "prod")
	if got, _ := invA.Namespace("prod"); got.Status.Phase != corev1.NamespaceTerminating {
		t.Fatal("terminating not visible at once")
	}
	testutil.Eventually(t, 0, "B to see prod terminating", func() bool {
		got, ok := invB.Namespace("prod")
		return ok && got.Status.Phase == corev1.NamespaceTerminating
	})
	// An upload elsewhere replaces both inventories.
	if err := b.store.ReplaceNamespaces(ctx, tenant, cluster, []*corev1.Namespace{ns("only", nil)}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 0, "A to take the upload", func() bool {
		inv, err := a.Lookup(ctx, tenant, cluster)
		_, only := inv.Namespace("only")
		_, old := inv.Namespace("team-x")
		return err == nil && only && !old && inv.NamespaceCount() == 1
	})
}

// startCache starts one replica's cache, with its own pool and listener,
// on the database at url.
func startCache(t *testing.T, url string) *Cache {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	n, err := NewCache(New(pool), Config{Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	l := pgnotify.New(pool, nil)
	n.Subscribe(l)
	connected := make(chan struct{}, 1)
	l.OnConnect(func() {
		select {
		case connected <- struct{}{}:
		default:
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = l.Run(ctx) })
	wg.Go(func() { _ = n.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	<-connected
	return n
}

// A reload between learning a namespace and writing it (an upload
// elsewhere, a reconnect) must not make the namespace vanish, and holders
// of the inventory see the reload.
func TestReloadKeepsPendingLearnedNamespace(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := New(pool)
	// Not running: learned writes stay queued.
	n, err := NewCache(s, Config{})
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
	n.Observe(tenant, cluster, ns("team-x", nil), nil)
	if err := s.ReplaceNamespaces(ctx, tenant, cluster, []*corev1.Namespace{ns("only", nil)}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.load(clusterKey{tenant, cluster}); err != nil {
		t.Fatal(err)
	}
	_, learned := inv.Namespace("team-x")
	_, only := inv.Namespace("only")
	_, prod := inv.Namespace("prod")
	if !learned || !only || prod {
		t.Fatalf("after reload: team-x %v, only %v, prod %v; want true, true, false", learned, only, prod)
	}
	// Once written, the database is the truth again.
	if it, ok := n.queue.next(); !ok || it.write == nil {
		t.Fatalf("queued: %+v %v; want the learned write", it, ok)
	} else if err := it.write(ctx); err != nil {
		t.Fatal(err)
	}
	if len(inv.pending) != 0 {
		t.Fatalf("pending after the write: %v", inv.pending)
	}
	if _, err := n.load(clusterKey{tenant, cluster}); err != nil {
		t.Fatal(err)
	}
	if _, ok := inv.Namespace("team-x"); !ok || inv.NamespaceCount() != 2 {
		t.Fatalf("after the write and a reload: team-x %v, %d namespaces", ok, inv.NamespaceCount())
	}
}
