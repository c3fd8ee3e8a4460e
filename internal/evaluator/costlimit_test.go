package evaluator

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// A tenant's request may cost at most its limit, summed over its bindings:
// a policy that is legal (each evaluation within the apiserver's budgets)
// still stops there, with the apiserver's own out-of-budget error, and its
// binding's failurePolicy decides. Without a limit nothing changes.
func TestCostLimitSpansTheRequest(t *testing.T) {
	const expr = "object.spec.tags.all(a, a.startsWith('t'))"
	costly := func(name string, f admissionregistrationv1.FailurePolicyType) *admissionregistrationv1.ValidatingAdmissionPolicy {
		return policy(name, validation(expr), widgetRules(), failurePolicy(f))
	}
	s := Compile(Objects{
		Policies: pols(costly("a", admissionregistrationv1.Fail), costly("b", admissionregistrationv1.Fail),
			costly("c", admissionregistrationv1.Ignore)),
		Bindings: binds(binding("a", "a"), binding("b", "b"), binding("c", "c")),
	}, CompileOptions{})
	req := widgetWithTags(1000)
	ns := NamespaceMap{"default": namespaceObj("default", nil)}
	traced := s.Evaluate(context.Background(), Validating, req, WithNamespaces(ns), WithTrace())
	if !traced.Allowed || traced.CostLimitExceeded {
		t.Fatalf("without a limit: %+v", traced.Status)
	}
	one := traced.Trace[0].Bindings[0].Validations[0].Cost
	if one <= 0 {
		t.Fatal("no cost traced")
	}

	for _, exact := range []bool{false, true} {
		var opts []Option
		if exact {
			opts = append(opts, func(c *evalConfig) { c.exact = true })
		}
		// Two bindings fit; the third (Ignore) runs out and is ignored.
		res := s.Evaluate(context.Background(), Validating, req, append(opts, WithNamespaces(ns), WithCostLimit(2*one+one/2))...)
		if !res.Allowed || !res.CostLimitExceeded || res.Bindings[2].Error == "" ||
			!strings.Contains(res.Bindings[2].Error, "running out of cost budget") {
			t.Fatalf("exact=%v, limit 2.5 evaluations: %+v %+v", exact, res.Status, res.Bindings)
		}
		// One fits; the second (Fail) runs out and denies, as the
		// apiserver words it.
		res = s.Evaluate(context.Background(), Validating, req, append(opts, WithNamespaces(ns), WithCostLimit(one+one/2))...)
		if res.Allowed || !res.CostLimitExceeded ||
			!strings.Contains(res.Status.Message, "validation failed due to running out of cost budget, no further validation rules will be run") {
			t.Fatalf("exact=%v, limit 1.5 evaluations: %+v", exact, res.Status)
		}
	}
	// A limit the request stays within changes nothing.
	if res := s.Evaluate(context.Background(), Validating, req, WithNamespaces(ns), WithCostLimit(10*one)); !res.Allowed || res.CostLimitExceeded {
		t.Fatalf("within the limit: %+v", res.Status)
	}
}

// The limit spans a mutating request too: both of its passes and every
// binding share it, and a mutation past it fails as the plugin's own budget
// fails (failurePolicy Fail, the default, denies).
func TestCostLimitSpansAMutation(t *testing.T) {
	p, b := newMAP("p", "", applyConfig(`Object{metadata: Object.metadata{labels: {"team": "a"}}}`))
	s := Compile(Objects{MutatingPolicies: []*admissionregistrationv1.MutatingAdmissionPolicy{p},
		MutatingBindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b}}, CompileOptions{})
	if res := s.Evaluate(context.Background(), Mutating, mutatePodRequest(), WithCostLimit(1_000_000)); !res.Allowed ||
		res.CostLimitExceeded || len(res.Patch) == 0 {
		t.Fatalf("within the limit: %+v %s", res.Status, res.Patch)
	}
	res := s.Evaluate(context.Background(), Mutating, mutatePodRequest(), WithCostLimit(1))
	if res.Allowed || !res.CostLimitExceeded || !strings.Contains(res.Status.Message, "running out of cost budget") {
		t.Fatalf("over the limit: %+v", res.Status)
	}
}
