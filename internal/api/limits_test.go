package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/inventory"
	"github.com/portcullis-dev/portcullis/internal/limits"
)

func TestTenantLimitsRoutes(t *testing.T) {
	e := newEnv(t)
	path := "/api/v1/tenants/a/limits"
	var got apiv1.TenantLimits
	e.doJSON(e.viewerA, "GET", path, nil, 200, &got)
	defaults := apiv1.Limits{ConcurrentEvaluations: 2, CELCostPerRequest: limits.DefaultCELCostPerRequest,
		MaxNamespacesPerCluster: inventory.DefaultMaxNamespaces, MaxCRDsPerCluster: inventory.DefaultMaxCRDs}
	if got.Tenant != "a" || got.Defaults != defaults || got.Overrides != (apiv1.Limits{}) || got.Effective != defaults {
		t.Fatalf("before any override: %+v", got)
	}
	got = apiv1.TenantLimits{}
	e.doJSON(e.operator, "PUT", path, apiv1.Limits{ConcurrentEvaluations: 4, RequestsPerSecond: 50}, 200, &got)
	want := apiv1.Limits{ConcurrentEvaluations: 4, CELCostPerRequest: limits.DefaultCELCostPerRequest, RequestsPerSecond: 50,
		MaxNamespacesPerCluster: inventory.DefaultMaxNamespaces, MaxCRDsPerCluster: inventory.DefaultMaxCRDs}
	if got.Effective != want || got.Overrides.CELCostPerRequest != 0 {
		t.Fatalf("after the override: %+v", got)
	}
	// Tenant b keeps the defaults.
	got = apiv1.TenantLimits{}
	e.doJSON(e.operator, "GET", "/api/v1/tenants/b/limits", nil, 200, &got)
	if got.Effective != defaults {
		t.Fatalf("tenant b: %+v", got)
	}
	entries := e.auditEntries()
	if len(entries) == 0 || entries[0].Kind != "TenantLimits" || entries[0].Action != "update" || entries[0].Name != "a" {
		t.Fatalf("audit: %+v", entries)
	}
	e.run(t, []apiCase{
		{"a tenant admin cannot raise its own limits", e.adminA, "PUT", path, apiv1.Limits{ConcurrentEvaluations: 100}, 403, "operator token", ""},
		{"another tenant's limits", e.adminB, "GET", path, nil, 404, `tenant "a" not found`, ""},
		{"negative concurrency", e.operator, "PUT", path, apiv1.Limits{ConcurrentEvaluations: -1}, 422, "between 1 and 10000", "concurrentEvaluations"},
		{"negative cost", e.operator, "PUT", path, apiv1.Limits{CELCostPerRequest: -5}, 422, "between 1 and", "celCostPerRequest"},
		{"too much concurrency", e.operator, "PUT", path, apiv1.Limits{ConcurrentEvaluations: 10_001}, 422, "between 1 and 10000", "concurrentEvaluations"},
		{"a cost past what JSON clients read exactly", e.operator, "PUT", path, apiv1.Limits{CELCostPerRequest: 1 << 53}, 422, "between 1 and 9007199254740991", "celCostPerRequest"},
		{"a rate too small to say when to retry", e.operator, "PUT", path, apiv1.Limits{RequestsPerSecond: 1e-9}, 422, "between 0.001 and 1e+06", "requestsPerSecond"},
		{"a rate no replica serves", e.operator, "PUT", path, apiv1.Limits{RequestsPerSecond: 1e7}, 422, "between 0.001 and 1e+06", "requestsPerSecond"},
		{"a negative rate", e.operator, "PUT", path, apiv1.Limits{RequestsPerSecond: -1}, 422, "between", "requestsPerSecond"},
		{"a negative namespace bound", e.operator, "PUT", path, apiv1.Limits{MaxNamespacesPerCluster: -1}, 422, "between 1 and 1000000", "maxNamespacesPerCluster"},
		{"a namespace bound past the range", e.operator, "PUT", path, apiv1.Limits{MaxNamespacesPerCluster: 1_000_001}, 422, "between 1 and 1000000", "maxNamespacesPerCluster"},
		{"a CRD bound past the range", e.operator, "PUT", path, apiv1.Limits{MaxCRDsPerCluster: 100_001}, 422, "between 1 and 100000", "maxCRDsPerCluster"},
		{"a negative CRD bound", e.operator, "PUT", path, apiv1.Limits{MaxCRDsPerCluster: -3}, 422, "between 1 and 100000", "maxCRDsPerCluster"},
		{"a tenant admin cannot raise its own bounds", e.adminA, "PUT", path, apiv1.Limits{MaxNamespacesPerCluster: 1_000_000}, 403, "operator token", ""},
		{"unknown field", e.operator, "PUT", path, map[string]any{"rps": 5}, 400, "unknown field", ""},
		{"unknown tenant", e.operator, "PUT", "/api/v1/tenants/zz/limits", apiv1.Limits{}, 404, "not found", ""},
	})
}

// Every value the API accepts is stored: a cost per request past 2^31 was
// a 500 (issue 30, finding 12: the statement typed it as a 32-bit
// integer), and each bound of each range is accepted and read back.
func TestTenantLimitsStoreTheirWholeRange(t *testing.T) {
	e := newEnv(t)
	path := "/api/v1/tenants/a/limits"
	for _, in := range []apiv1.Limits{
		{CELCostPerRequest: 1_000_000_000_000_000},
		{ConcurrentEvaluations: limits.MaxConcurrentEvaluations, CELCostPerRequest: limits.MaxCELCostPerRequest,
			RequestsPerSecond: limits.MaxRequestsPerSecond, MaxNamespacesPerCluster: limits.MaxNamespacesPerCluster,
			MaxCRDsPerCluster: limits.MaxCRDsPerCluster},
		{ConcurrentEvaluations: 1, CELCostPerRequest: 1, RequestsPerSecond: limits.MinRequestsPerSecond,
			MaxNamespacesPerCluster: 1, MaxCRDsPerCluster: 1},
	} {
		var got apiv1.TenantLimits
		e.doJSON(e.operator, "PUT", path, in, 200, &got)
		if got.Overrides != in {
			t.Fatalf("stored %+v, sent %+v", got.Overrides, in)
		}
		got = apiv1.TenantLimits{}
		e.doJSON(e.viewerA, "GET", path, nil, 200, &got)
		if got.Overrides != in {
			t.Fatalf("read back %+v, sent %+v", got.Overrides, in)
		}
	}
}

// The per-cluster inventory bounds an operator sets through the API are
// the ones the inventory enforces (issue 30, finding 3): with the tenant's
// bounds lowered, an upload, a sync push and a CRD upload past them are
// refused with a 422 naming the field, at once (the inventory reads the
// bounds in each write's transaction), and another tenant keeps the
// defaults. Back at 0, the default applies again.
func TestTenantInventoryBoundsHoldOnUploads(t *testing.T) {
	e := newEnv(t)
	e.cluster(e.tenantA.ID, "prod")
	e.cluster(e.tenantB.ID, "prod")
	limitsPath := "/api/v1/tenants/a/limits"
	var got apiv1.TenantLimits
	e.doJSON(e.operator, "PUT", limitsPath, apiv1.Limits{MaxNamespacesPerCluster: 2, MaxCRDsPerCluster: 1}, 200, &got)
	if got.Effective.MaxNamespacesPerCluster != 2 || got.Effective.MaxCRDsPerCluster != 1 ||
		got.Defaults.MaxNamespacesPerCluster != inventory.DefaultMaxNamespaces {
		t.Fatalf("after lowering the bounds: %+v", got)
	}
	if b, err := e.s.Inventory.Bounds(t.Context(), e.tenantA.ID); err != nil || b != (inventory.Bounds{Namespaces: 2, CRDs: 1}) {
		t.Fatalf("the inventory reads %+v, %v", b, err)
	}

	three := "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: c}\n"
	two := three[:strings.LastIndex(three, "---")]
	crd := func(plural string) string {
		return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: " + plural + ".example.com}\n" +
			"spec: {group: example.com, names: {kind: K" + plural + ", plural: " + plural + "}, scope: Cluster, versions: [{name: v1, served: true, storage: true}]}\n"
	}
	ns := func(name string) json.RawMessage { return json.RawMessage(`{"metadata":{"name":"` + name + `"}}`) }
	sync := "/api/v1/tenants/a/clusters/prod/namespaces/sync"
	e.run(t, []apiCase{
		{"three namespaces over a bound of two", e.adminA, "PUT", "/api/v1/tenants/a/clusters/prod/namespaces", three, 422, "over its bound of 2", "items"},
		{"two namespaces", e.adminA, "PUT", "/api/v1/tenants/a/clusters/prod/namespaces", two, 200, "", ""},
		{"a sync push adding a third", e.adminA, "POST", sync, apiv1.NamespaceSync{Namespaces: []json.RawMessage{ns("c")}}, 422, "over its bound of 2", "namespaces"},
		{"two CRDs over a bound of one", e.adminA, "PUT", "/api/v1/tenants/a/clusters/prod/crds", crd("widgets") + "---\n" + crd("gadgets"), 422, "over its bound of 1", "items"},
		{"one CRD", e.adminA, "PUT", "/api/v1/tenants/a/clusters/prod/crds", crd("widgets"), 200, "", ""},
		{"tenant b keeps the defaults", e.adminB, "PUT", "/api/v1/tenants/b/clusters/prod/namespaces", three, 200, "", ""},
	})

	// Back to the default: the same upload passes.
	got = apiv1.TenantLimits{}
	e.doJSON(e.operator, "PUT", limitsPath, apiv1.Limits{}, 200, &got)
	if got.Effective.MaxNamespacesPerCluster != inventory.DefaultMaxNamespaces || got.Overrides.MaxNamespacesPerCluster != 0 {
		t.Fatalf("after restoring the default: %+v", got)
	}
	e.doJSON(e.adminA, "PUT", "/api/v1/tenants/a/clusters/prod/namespaces", three, http.StatusOK, nil)
}

// The defaults shown are the ones the inventory enforces, as the gateway
// set them (--max-namespaces-per-cluster, --max-crds-per-cluster).
func TestTenantLimitsShowTheInventoryDefaults(t *testing.T) {
	e := newEnv(t)
	e.s.Inventory.SetDefaultBounds(inventory.Bounds{Namespaces: 500, CRDs: 50})
	var got apiv1.TenantLimits
	e.doJSON(e.viewerA, "GET", "/api/v1/tenants/a/limits", nil, 200, &got)
	if got.Defaults.MaxNamespacesPerCluster != 500 || got.Defaults.MaxCRDsPerCluster != 50 || got.Effective.MaxCRDsPerCluster != 50 {
		t.Fatalf("limits: %+v", got)
	}
}
