package evaluator

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Every error a binding can end with carries the cause of what made it,
// whichever step made it and whether the failurePolicy denies or allows.
func TestBindingResultCause(t *testing.T) {
	big := "[" + strings.Repeat("0,", 119) + "0]"
	perCall := big + ".all(a, " + big + ".all(b, " + big + ".all(c, a + b + c >= 0)))"
	badSelector := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Nope"}}}
	deny := admissionregistrationv1.DenyAction
	cases := []struct {
		name      string
		policy    *admissionregistrationv1.ValidatingAdmissionPolicy
		binding   *admissionregistrationv1.ValidatingAdmissionPolicyBinding
		params    []*unstructured.Unstructured
		ns        NamespaceMap
		cancelled bool
		want      Cause
	}{
		{name: "pass", policy: policy("p", validation("true")), want: CauseNone},
		{name: "violation", policy: policy("p", validation("false")), want: CauseNone},
		{name: "runtime error", policy: policy("p", validation("object.x == 1")), want: CauseError},
		{name: "runtime error under Ignore", policy: policy("p", validation("object.x == 1"), failurePolicy(admissionregistrationv1.Ignore)), want: CauseError},
		{name: "cost limit", policy: policy("p", validation(perCall)), want: CauseError},
		{name: "validation does not compile", policy: policy("p", validation("1 +")), want: CauseCompileError},
		{name: "validation reads a variable that does not compile", policy: policy("p", variable("v", "1 +"), validation("variables.v == 1")), want: CauseCompileError},
		{name: "validation reads a variable that reads one that does not compile", policy: policy("p", variable("v", "1 +"), variable("w", "variables.v + 1"), validation("variables.w == 1")), want: CauseCompileError},
		{name: "variable fails at run time", policy: policy("p", variable("v", "object.x"), validation("variables.v == 1")), want: CauseError},
		{name: "authorizer refused", policy: policy("p", validation("authorizer.requestResource.check('get').allowed()")), want: CauseCompileError},
		{name: "matchCondition does not compile", policy: policy("p", matchCondition("m", "1 +"), matchCondition("n", "object.x == 1"), validation("true")), want: CauseCompileError},
		{name: "matchCondition fails at run time", policy: policy("p", matchCondition("m", "object.x == 1"), validation("true")), want: CauseError},
		{name: "audit annotation fails at run time", policy: policy("p", validation("true"), auditAnnotation("k", "'x'"), auditAnnotation("n", "string(object.x)")), want: CauseError},
		{name: "audit annotation does not compile", policy: policy("p", validation("true"), auditAnnotation("k", "1 +")), want: CauseCompileError},
		{name: "deadline", policy: policy("p", validation("true")), cancelled: true, want: CauseTimeout},
		{name: "namespaceSelector on an unknown namespace", policy: policy("p", validation("true"), nsSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}})),
			ns: NamespaceMap{}, want: CauseUnknownNamespace},
		{name: "namespaceObject of an unknown namespace", policy: policy("p", validation("namespaceObject.metadata.labels.size() > 0")), ns: NamespaceMap{}, want: CauseUnknownNamespace},
		{name: "missing matchConstraints", policy: policy("p", noConstraints(), validation("true")), want: CauseConfiguration},
		{name: "bad param selector", policy: policy("p", paramKind("v1", "ConfigMap"), validation("true")),
			binding: binding("b", "p", paramRefSelector("", badSelector, allow)), want: CauseConfiguration},
		{name: "param not found with Deny", policy: policy("p", paramKind("v1", "ConfigMap"), validation("true")),
			binding: binding("b", "p", paramRefName("", "nope", deny)), want: CauseParamNotFound},
		{name: "param found", policy: policy("p", paramKind("v1", "ConfigMap"), validation("params.data.x == '1'")),
			binding: binding("b", "p", paramRefName("", "cm", deny)), params: []*unstructured.Unstructured{configMap("default", "cm", nil, map[string]any{"x": "1"})}, want: CauseNone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.binding
			if b == nil {
				b = binding("b", "p")
			}
			s := Compile(Objects{Policies: pols(tc.policy), Bindings: binds(b), Params: tc.params}, CompileOptions{})
			ns := tc.ns
			if ns == nil {
				ns = NamespaceMap{"default": namespaceObj("default", nil)}
			}
			ctx, cancel := context.WithCancel(context.Background())
			if tc.cancelled {
				cancel()
			} else {
				defer cancel()
			}
			for _, opts := range [][]Option{nil, {WithTrace()}} {
				res := s.Evaluate(ctx, Validating, podRequest("CREATE"), append(opts, WithNamespaces(ns))...)
				if len(res.Bindings) != 1 {
					t.Fatalf("bindings = %+v", res.Bindings)
				}
				br := res.Bindings[0]
				if br.Cause != tc.want || (br.Cause == CauseNone) != (br.Error == "") || br.Timeout != (tc.want == CauseTimeout) {
					t.Fatalf("binding = %+v, want cause %q", br, tc.want)
				}
				if br.Cause != CauseNone && !br.FailurePolicyApplied {
					t.Fatalf("binding = %+v: an error without the failurePolicy", br)
				}
			}
		})
	}
}

func TestCauseNames(t *testing.T) {
	seen := map[string]bool{}
	for c := CauseNone; c <= CauseError; c++ {
		name := c.String()
		if (name == "") != (c == CauseNone) || seen[name] {
			t.Errorf("cause %d is named %q", c, name)
		}
		seen[name] = true
	}
	if got := (CauseError + 1).String(); got != "Cause(7)" {
		t.Errorf("an unknown cause is named %q", got)
	}
}
