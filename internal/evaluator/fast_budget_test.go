package evaluator

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// widgetWithTags is the test Pod, as a custom resource, with n strings
// under spec.tags, to make comprehensions as expensive as needed.
func widgetWithTags(n int) *Request {
	r := podRequest("CREATE", asWidget())
	tags := make([]any, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("t%d", i)
	}
	r.Object["spec"].(map[string]any)["tags"] = tags
	return r
}

// validateBoth evaluates with and without the fast path and requires the
// same result.
func validateBoth(t *testing.T, s *Snapshot, req *Request) *Result {
	t.Helper()
	ns := NamespaceMap{"default": namespaceObj("default", nil)}
	fast := s.Evaluate(context.Background(), Validating, req, WithNamespaces(ns))
	exact := s.Evaluate(context.Background(), Validating, req, WithNamespaces(ns), func(c *evalConfig) { c.exact = true })
	if !reflect.DeepEqual(fast, exact) {
		t.Fatalf("fast path result differs from the exact one:\n fast %+v\nexact %+v", fast, exact)
	}
	return fast
}

func TestFastPathLeavesTheCostLimitToCEL(t *testing.T) {
	// About 1,000² steps: far beyond the per-expression limit of 1e6.
	s := Compile(Objects{
		Policies: pols(policy("p", validation("object.spec.tags.all(a, object.spec.tags.all(b, a == b || true))"), widgetRules())),
		Bindings: binds(binding("b", "p")),
	}, CompileOptions{})
	res := validateBoth(t, s, widgetWithTags(1000))
	if res.Allowed || !strings.Contains(res.Status.Message, "cost limit exceeded") {
		t.Fatalf("want the cost limit error, got %+v", res.Status)
	}
}

func TestFastPathBudgetIsDecidedByExactCosts(t *testing.T) {
	// Five 1,000-character tags matched against a 400-character pattern:
	// about 50,000 per validation, under the fast path's ceiling, so that
	// about 200 of them meet the 1e7 per-evaluation budget.
	req := podRequest("CREATE", asWidget())
	tags := make([]any, 5)
	for i := range tags {
		tags[i] = "t" + strings.Repeat("x", 999)
	}
	req.Object["spec"].(map[string]any)["tags"] = tags
	compile := func(expr string, n int) *Snapshot {
		opts := []policyOpt{widgetRules()}
		for range n {
			opts = append(opts, validation(expr))
		}
		return Compile(Objects{Policies: pols(policy("p", opts...)), Bindings: binds(binding("b", "p"))}, CompileOptions{})
	}
	// Look for a pattern length where some count n of validations fits the
	// budget by exact cost (n*actual <= 1e7) but not by bound.
	const budget = 10_000_000
	var expr string
	var n int
	var actual int64
	for k := 90; k < 130 && n == 0; k++ {
		e := "object.spec.tags.all(a, a.matches('^t" + strings.Repeat("(x)?", k) + "'))"
		traced := compile(e, 1).Evaluate(context.Background(), Validating, req, WithTrace())
		a := traced.Trace[0].Bindings[0].Validations[0].Cost
		_, bound, ok := fastProgramForTest(t, e).Eval(&fastEnvStub{object: req.Object})
		if !ok {
			t.Fatal("the fast interpreter declined")
		}
		if c := budget / int(a); c*int(bound) > budget {
			expr, n, actual = e, c, a
		}
	}
	if n == 0 {
		t.Fatal("no pattern length separates the bound from the actual cost")
	}

	// n validations fit the budget by their exact cost but not by their
	// bounds: the request is evaluated again, exactly, and allowed.
	before := fastRedos.Load()
	if res := validateBoth(t, compile(expr, n), req); !res.Allowed {
		t.Fatalf("%d validations of cost %d: %+v", n, actual, res.Status)
	}
	if fastRedos.Load() == before {
		t.Fatal("the bounds did not run out: the test does not test the redo")
	}
	// One more runs out of budget, exactly as cel-go says.
	res := validateBoth(t, compile(expr, n+1), req)
	if res.Allowed || !strings.Contains(res.Status.Message, "running out of cost budget") {
		t.Fatalf("%d validations of cost %d: %+v", n+1, actual, res.Status)
	}
}
