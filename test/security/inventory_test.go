package security

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/inventory"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/policystore"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
	"github.com/portcullis-dev/portcullis/internal/testutil"
	"github.com/portcullis-dev/portcullis/internal/webhook"
)

// exemptable denies privileged containers except in namespaces labelled
// policy.example.com/exempt=true.
const exemptable = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: no-privileged}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["pods"]}
  validations:
  - expression: "object.spec.containers.all(c, !has(c.securityContext) || !has(c.securityContext.privileged) || !c.securityContext.privileged)"
    message: "privileged containers are not allowed"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-privileged}
spec:
  policyName: no-privileged
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchExpressions:
      - {key: policy.example.com/exempt, operator: NotIn, values: ["true"]}
`

const privilegedPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"team-a"},"spec":{"containers":[{"name":"c","image":"busybox","securityContext":{"privileged":true}}]}}`

// gateway is the validating webhook over a real namespace inventory in
// PostgreSQL, with one tenant (7) and one cluster.
type gateway struct {
	t               *testing.T
	h               *webhook.Handler
	store           *inventory.Store
	cache           *inventory.Cache
	tenant, cluster int64
}

func newGateway(t *testing.T, policies string) *gateway {
	t.Helper()
	pool := pgtest.Pool(t)
	g := &gateway{t: t, store: inventory.New(pool)}
	g.tenant = pgtest.InsertTenant(t, pool)
	g.cluster = pgtest.InsertCluster(t, pool, g.tenant)
	g.cache = newCache(t, g.store)
	snap := &policystore.Snapshot{TenantID: g.tenant, Version: 1, Compiled: compilePolicies(t, policies)}
	g.h = &webhook.Handler{
		Authenticate: func(*http.Request) (tenancy.Identity, error) {
			return tenancy.Identity{TenantID: g.tenant, TenantName: "acme", ClusterID: g.cluster, ClusterName: "prod"}, nil
		},
		Snapshot: func(context.Context, int64) (*policystore.Snapshot, error) { return snap, nil },
		Namespaces: func(ctx context.Context, tenantID, clusterID int64) (evaluator.NamespaceLookup, error) {
			return g.cache.Lookup(ctx, tenantID, clusterID)
		},
		Observe:          g.cache.Observe,
		LearnTerminating: g.cache.LearnNamespaceTerminating,
		Metrics:          webhook.NewMetrics(prometheus.NewRegistry(), true),
		Logger:           slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	return g
}

// newCache starts a namespace cache on store; it stops with the test.
func newCache(t *testing.T, store *inventory.Store) *inventory.Cache {
	t.Helper()
	c, err := inventory.NewCache(store, inventory.Config{Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = c.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return c
}

func compilePolicies(t *testing.T, docs string) *evaluator.Snapshot {
	t.Helper()
	var objs evaluator.Objects
	for _, doc := range strings.Split(docs, "\n---\n") {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "ValidatingAdmissionPolicy":
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			if err := yaml.UnmarshalStrict([]byte(doc), p); err != nil {
				t.Fatal(err)
			}
			objs.Policies = append(objs.Policies, p)
		case "ValidatingAdmissionPolicyBinding":
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			if err := yaml.UnmarshalStrict([]byte(doc), b); err != nil {
				t.Fatal(err)
			}
			objs.Bindings = append(objs.Bindings, b)
		}
	}
	s := evaluator.Compile(objs, evaluator.CompileOptions{Mode: evaluator.NewExpressions})
	if errs := s.CompileErrors(); len(errs) > 0 {
		t.Fatalf("compile: %v", errs)
	}
	return s
}

// review posts one request to the validating webhook and returns whether
// it was allowed.
func (g *gateway) review(uid, resource, op, namespace, name string, object, oldObject any) *admissionv1.AdmissionResponse {
	g.t.Helper()
	kind := map[string]string{"pods": "Pod", "namespaces": "Namespace"}[resource]
	req := map[string]any{
		"uid":       uid,
		"kind":      map[string]string{"group": "", "version": "v1", "kind": kind},
		"resource":  map[string]string{"group": "", "version": "v1", "resource": resource},
		"name":      name,
		"namespace": namespace,
		"operation": op,
		"userInfo":  map[string]any{"username": "mallory"},
		"object":    object,
		"oldObject": oldObject,
	}
	body, err := json.Marshal(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req})
	if err != nil {
		g.t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/t/acme/validate", strings.NewReader(string(body)))
	r.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	g.h.ServeHTTP(rec, r)
	var rev admissionv1.AdmissionReview
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &rev) != nil || rev.Response == nil {
		g.t.Fatalf("%s: %d %s", uid, rec.Code, rec.Body)
	}
	return rev.Response
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	l := map[string]string{"kubernetes.io/metadata.name": name}
	for k, v := range labels {
		l[k] = v
	}
	return &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l, ResourceVersion: "10"}}
}

func (g *gateway) podAllowed(uid string) bool {
	g.t.Helper()
	return g.review(uid, "pods", "CREATE", "team-a", "p", json.RawMessage(privilegedPod), nil).Allowed
}

// flush waits until the cache has written what it observed, so that a
// second replica, loading from the database, sees it.
func (g *gateway) flush() {
	g.t.Helper()
	// The observation queue is FIFO: once a write queued after it is
	// visible in the database, so is everything before it.
	marker := namespace("zz-flush", nil)
	g.cache.Observe(g.tenant, g.cluster, nil, marker)
	testutil.Eventually(g.t, 0, "the inventory writes to reach the database", func() bool {
		_, err := g.store.GetProvisional(context.Background(), g.tenant, g.cluster, "zz-flush")
		return err == nil
	})
}

// Attack 1.1: a Namespace UPDATE that adds the exemption label is allowed
// by the gateway and rejected by a later admission step, so the label is
// never stored. It must not exempt the namespace: a privileged Pod there is
// still denied, on this replica and on a replica that loads the inventory
// from the database.
func TestUncommittedNamespaceLabelDoesNotExempt(t *testing.T) {
	g := newGateway(t, exemptable)
	ctx := context.Background()
	stored := namespace("team-a", nil)
	if err := g.store.ReplaceNamespaces(ctx, g.tenant, g.cluster, []*corev1.Namespace{stored}); err != nil {
		t.Fatal(err)
	}
	if g.podAllowed("before") {
		t.Fatal("a privileged pod was allowed before any label change: the test proves nothing")
	}
	proposed := namespace("team-a", map[string]string{"policy.example.com/exempt": "true"})
	if !g.review("label", "namespaces", "UPDATE", "team-a", "team-a", proposed, stored).Allowed {
		t.Fatal("the gateway denied the label change; the attack needs it allowed")
	}
	// Another admission step rejects the update: the apiserver stores
	// nothing, and the gateway is never told.
	if g.podAllowed("after") {
		t.Fatal("a label the apiserver never stored exempted the namespace")
	}
	g.flush()
	other := &gateway{t: t, h: g.h, store: g.store, cache: newCache(t, g.store), tenant: g.tenant, cluster: g.cluster}
	h := *g.h
	h.Namespaces = func(ctx context.Context, tenantID, clusterID int64) (evaluator.NamespaceLookup, error) {
		return other.cache.Lookup(ctx, tenantID, clusterID)
	}
	h.Observe = other.cache.Observe
	other.h = &h
	if other.podAllowed("other-replica") {
		t.Fatal("another replica took the uncommitted label from the database")
	}
	// A later request on the namespace shows what the apiserver stored:
	// still no label. That corrects the proposal.
	annotated := stored.DeepCopy()
	annotated.Annotations = map[string]string{"note": "x"}
	g.review("later", "namespaces", "UPDATE", "team-a", "team-a", annotated, stored)
	if g.podAllowed("corrected") {
		t.Fatal("denied no more after the correction")
	}
	// When the apiserver did store the label (a later oldObject shows it),
	// the namespace is exempt: the label was committed.
	g.review("confirm", "namespaces", "UPDATE", "team-a", "team-a", proposed, proposed)
	if !g.podAllowed("committed") {
		t.Fatal("a committed exemption did not exempt: the test cannot tell the two apart")
	}
}

// Attack 1.1, the other way: a proposal removing the exemption makes the
// binding apply at once, before anything confirms it (stricter is safe).
func TestProvisionalLabelOnlyTightens(t *testing.T) {
	g := newGateway(t, exemptable)
	ctx := context.Background()
	exempt := namespace("team-a", map[string]string{"policy.example.com/exempt": "true"})
	if err := g.store.ReplaceNamespaces(ctx, g.tenant, g.cluster, []*corev1.Namespace{exempt}); err != nil {
		t.Fatal(err)
	}
	if !g.podAllowed("exempt") {
		t.Fatal("an exempt namespace denied the pod")
	}
	g.review("unexempt", "namespaces", "UPDATE", "team-a", "team-a", namespace("team-a", nil), exempt)
	if g.podAllowed("proposed") {
		t.Fatal("a proposal removing the exemption did not apply the binding")
	}
}

// Attack 1.1 on a namespace the inventory does not know: a CREATE carrying
// the exemption label (rejected later, for example as AlreadyExists) must
// not settle the namespace as exempt. The binding follows its failurePolicy.
func TestProvisionalCreateDoesNotExemptUnknownNamespace(t *testing.T) {
	g := newGateway(t, exemptable)
	proposed := namespace("team-a", map[string]string{"policy.example.com/exempt": "true"})
	if !g.review("create", "namespaces", "CREATE", "team-a", "team-a", proposed, nil).Allowed {
		t.Fatal("the gateway denied the CREATE; the attack needs it allowed")
	}
	resp := g.review("pod", "pods", "CREATE", "team-a", "p", json.RawMessage(privilegedPod), nil)
	if resp.Allowed || !strings.Contains(resp.Result.Message, "unknown") {
		t.Fatalf("pod in a namespace known only by a proposal: allowed %v, %v", resp.Allowed, resp.Result)
	}
}
