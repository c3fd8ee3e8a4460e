package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/limits"
)

// POST .../evaluate is held to the tenant's limits as the webhook is
// (issue 30, finding 6): it takes one of the tenant's evaluation slots,
// counts against its rate (as the admin API's share of it) and its CEL
// cost per request bounds the evaluation.
func TestEvaluateUnderTheTenantsLimits(t *testing.T) {
	e := newEnv(t)
	e.cluster(e.tenantA.ID, "prod")
	e.doJSON(e.adminA, "PUT", "/api/v1/tenants/a/clusters/prod/namespaces", namespacesYAML, http.StatusOK, nil)
	e.apply(e.adminA, "/api/v1/tenants/a/apply", chainPolicies)
	rev := review(t, "admission.k8s.io/v1", "shop", sample(t, "pod.json"))
	path := "/api/v1/tenants/a/clusters/prod/evaluate"
	refused := func(t *testing.T, what string) {
		t.Helper()
		req, _ := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(`{"review":`+string(rev)+`}`))
		req.Header.Set("Authorization", "Bearer "+e.viewerA)
		req.Header.Set("Content-Type", "application/json")
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st struct{ Message string }
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(st.Message, what) {
			t.Fatalf("%d Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), st.Message)
		}
	}

	t.Run("concurrent evaluations", func(t *testing.T) {
		lim := limits.NewLimiter(limits.Limits{ConcurrentEvaluations: 1}, nil, nil)
		e.s.Limiter = lim
		// A cluster's evaluation holds the tenant's one slot.
		release, _, err := lim.Acquire(context.Background(), e.tenantA.ID, 99)
		if err != nil {
			t.Fatal(err)
		}
		refused(t, "over its limit of 1 concurrent evaluations")
		release()
		e.evaluate(e.viewerA, "prod", apiv1.EvaluateRequest{Review: rev})
	})

	t.Run("requests per second", func(t *testing.T) {
		// The admin API's share is 1 request per second, a burst of one.
		e.s.Limiter = limits.NewLimiter(limits.Limits{RequestsPerSecond: 2}, nil, nil)
		e.evaluate(e.viewerA, "prod", apiv1.EvaluateRequest{Review: rev})
		refused(t, "requests per second")
	})

	t.Run("CEL cost per request", func(t *testing.T) {
		e.s.Limiter = limits.NewLimiter(limits.Limits{CELCostPerRequest: 1}, nil, nil)
		for _, chain := range []bool{false, true} {
			res := e.evaluate(e.viewerA, "prod", apiv1.EvaluateRequest{Review: rev, Chain: chain})
			answer := res.Review
			if chain {
				// The mutating webhook's matchConditions run out first,
				// and its failurePolicy (Fail) ends the chain there.
				if res.Mutation == nil {
					t.Fatalf("chain: no mutating step: %+v", res)
				}
				answer = res.Mutation.Review
			}
			if !strings.Contains(string(answer), "running out of cost budget") {
				t.Fatalf("chain %v over the cost limit: %s", chain, answer)
			}
		}
	})
}
