package evaluator

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// An explicit JSON null is an absent field on a built-in kind, which the
// plugin sees typed, and a present one on a custom resource, which it sees
// as JSON: the fast interpreter must answer as cel-go does on each view
// (here: by declining, so that cel-go answers), whatever path runs.
func TestExplicitNullsAnswerAsTheView(t *testing.T) {
	for _, tc := range []struct {
		name, expr string
		req        *Request
		allowed    bool
	}{
		{"typed: has() of a null field is false", "object.spec.volumes.all(v, !has(v.hostPath))", podWithNullHostPath(), true},
		{"typed: a null field in an optional chain is absent", "!object.spec.volumes[0].?hostPath.hasValue()", podWithNullHostPath(), true},
		{"JSON: has() of a null field is true", "has(object.spec.size)", widgetWithNullSize(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := policy("p", validation(tc.expr), rules(rule([]string{"CREATE"}, []string{"", "example.com"}, []string{"v1"}, []string{"pods", "widgets"})))
			s := Compile(Objects{
				Policies: []*admissionregistrationv1.ValidatingAdmissionPolicy{p},
				Bindings: []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("b", "p")},
			}, CompileOptions{})
			if errs := s.CompileErrors(); len(errs) > 0 {
				t.Fatal(errs)
			}
			fast := s.Evaluate(context.Background(), Validating, tc.req)
			exact := s.Evaluate(context.Background(), Validating, tc.req, WithTrace()) // cel-go alone
			if fast.Allowed != tc.allowed || exact.Allowed != tc.allowed {
				t.Fatalf("allowed: fast path %v (%v), cel-go %v (%v); want %v", fast.Allowed, fast.Status, exact.Allowed, exact.Status, tc.allowed)
			}
		})
	}
}

func podWithNullHostPath() *Request {
	r := podRequest("CREATE")
	r.Object["spec"].(map[string]any)["volumes"] = []any{map[string]any{"name": "v", "hostPath": nil, "emptyDir": map[string]any{}}}
	return r
}

func widgetWithNullSize() *Request {
	r := podRequest("CREATE", asWidget())
	r.Object["spec"] = map[string]any{"size": nil}
	return r
}
