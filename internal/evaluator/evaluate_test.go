package evaluator

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestKindString(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		want string
	}{
		{Validating, "validate"},
		{Mutating, "mutate"},
		{Kind(0), "validate"}, // the zero value validates
	} {
		if got := tc.kind.String(); got != tc.want {
			t.Errorf("Kind(%d).String() = %q, want %q", tc.kind, got, tc.want)
		}
	}
}

// TestEvaluateKind evaluates one request against a snapshot holding a
// ValidatingAdmissionPolicy that denies it and a MutatingAdmissionPolicy
// that labels it: the kind alone says which runs.
func TestEvaluateKind(t *testing.T) {
	mp, mb := newMAP("label", "", applyConfig(`Object{metadata: Object.metadata{labels: {"team": "a"}}}`))
	s := Compile(Objects{
		Policies:         []*admissionregistrationv1.ValidatingAdmissionPolicy{policy("deny", validationFull("false", "no pods", "", ""))},
		Bindings:         []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("deny-binding", "deny")},
		MutatingPolicies: []*admissionregistrationv1.MutatingAdmissionPolicy{mp},
		MutatingBindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{mb},
	}, CompileOptions{})
	if errs := s.CompileErrors(); len(errs) > 0 {
		t.Fatal(errs)
	}
	tests := []struct {
		name        string
		kind        Kind
		wantAllowed bool
		wantPatch   string
		wantPolicy  string
	}{
		{name: "validating", kind: Validating, wantPolicy: "deny"},
		{name: "mutating", kind: Mutating, wantAllowed: true, wantPolicy: "label",
			wantPatch: `[{"op":"add","path":"/metadata/labels/team","value":"a"}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := s.Evaluate(context.Background(), tc.kind, mutatePodRequest())
			if res.Allowed != tc.wantAllowed || string(res.Patch) != tc.wantPatch {
				t.Fatalf("allowed=%v patch=%s, want %v %s", res.Allowed, res.Patch, tc.wantAllowed, tc.wantPatch)
			}
			if len(res.Bindings) != 1 || res.Bindings[0].Policy != tc.wantPolicy {
				t.Fatalf("bindings = %+v, want one of policy %q", res.Bindings, tc.wantPolicy)
			}
		})
	}
}

// TestWithNamespaces: without the option every namespace is unknown, and
// a binding that needs one follows its failurePolicy; with it, the
// namespace's labels decide.
func TestWithNamespaces(t *testing.T) {
	s := Compile(Objects{
		Policies: []*admissionregistrationv1.ValidatingAdmissionPolicy{policy("deny", validationFull("false", "no pods here", "", ""))},
		Bindings: []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("deny-binding", "deny",
			matchResources(func(m *admissionregistrationv1.MatchResources) {
				m.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
			}))},
	}, CompileOptions{})
	prod := NamespaceMap{"default": &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"env": "prod"}}}}
	dev := NamespaceMap{"default": &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"env": "dev"}}}}
	tests := []struct {
		name        string
		opts        []Option
		wantAllowed bool
		wantUnknown string
		wantMessage string
	}{
		{name: "no inventory: unknown, failurePolicy Fail denies", wantUnknown: "default", wantMessage: `namespace "default" is unknown`},
		{name: "nil inventory: the same", opts: []Option{WithNamespaces(nil)}, wantUnknown: "default",
			wantMessage: `namespace "default" is unknown`},
		{name: "selected namespace", opts: []Option{WithNamespaces(prod)}, wantMessage: "denied request: no pods here"},
		{name: "other namespace", opts: []Option{WithNamespaces(dev)}, wantAllowed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := s.Evaluate(context.Background(), Validating, podRequest("CREATE"), tc.opts...)
			if res.Allowed != tc.wantAllowed || res.UnknownNamespace != tc.wantUnknown {
				t.Fatalf("allowed=%v unknown=%q, want %v %q: %+v", res.Allowed, res.UnknownNamespace, tc.wantAllowed, tc.wantUnknown, res.Status)
			}
			if tc.wantMessage != "" && !strings.Contains(res.Status.Message, tc.wantMessage) {
				t.Fatalf("message = %q, want it to contain %q", res.Status.Message, tc.wantMessage)
			}
		})
	}
}
