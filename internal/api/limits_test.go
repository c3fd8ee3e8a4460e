package api

import (
	"testing"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/limits"
)

func TestTenantLimitsRoutes(t *testing.T) {
	e := newEnv(t)
	path := "/api/v1/tenants/a/limits"
	var got apiv1.TenantLimits
	e.doJSON(e.viewerA, "GET", path, nil, 200, &got)
	defaults := apiv1.Limits{ConcurrentEvaluations: 2, CELCostPerRequest: limits.DefaultCELCostPerRequest}
	if got.Tenant != "a" || got.Defaults != defaults || got.Overrides != (apiv1.Limits{}) || got.Effective != defaults {
		t.Fatalf("before any override: %+v", got)
	}
	got = apiv1.TenantLimits{}
	e.doJSON(e.operator, "PUT", path, apiv1.Limits{ConcurrentEvaluations: 4, RequestsPerSecond: 50}, 200, &got)
	want := apiv1.Limits{ConcurrentEvaluations: 4, CELCostPerRequest: limits.DefaultCELCostPerRequest, RequestsPerSecond: 50}
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
			RequestsPerSecond: limits.MaxRequestsPerSecond},
		{ConcurrentEvaluations: 1, CELCostPerRequest: 1, RequestsPerSecond: limits.MinRequestsPerSecond},
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
