package evaluator

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// provisionalMap is an inventory with committed and provisional objects.
type provisionalMap struct{ committed, provisional NamespaceMap }

func (m provisionalMap) Namespace(name string) (*corev1.Namespace, bool) {
	return m.committed.Namespace(name)
}
func (m provisionalMap) ProvisionalNamespace(name string) (*corev1.Namespace, bool) {
	return m.provisional.Namespace(name)
}

// The exact rule of a provisional namespace: a binding's namespaceSelector
// applies when it matches the committed labels or the provisional ones; a
// proposal never stops a binding from applying, nor settles an unknown
// namespace; namespaceObject is the committed object, unknown while an
// allowed change that differs from it is pending.
func TestProvisionalNamespaceOnlyTightens(t *testing.T) {
	exempt := map[string]string{"exempt": "true"}
	notExempt := func(b *admissionregistrationv1.MatchResources) {
		b.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "exempt", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"true"}}}}
	}
	onlyProd := func(b *admissionregistrationv1.MatchResources) {
		b.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	}
	deny := policy("p", validation("false"))
	readsNamespace := policy("p", validation("namespaceObject.metadata.labels.env != 'prod'"))
	tests := []struct {
		name        string
		p           *admissionregistrationv1.ValidatingAdmissionPolicy
		sel         func(*admissionregistrationv1.MatchResources)
		committed   *corev1.Namespace // nil: unknown
		provisional *corev1.Namespace // nil: none
		wantAllowed bool
		wantUnknown bool
	}{
		{"committed not exempt, proposal exempt: applies", deny, notExempt, namespaceObj("default", nil), namespaceObj("default", exempt), false, false},
		{"committed exempt, proposal not: applies", deny, notExempt, namespaceObj("default", exempt), namespaceObj("default", nil), false, false},
		{"committed exempt, no proposal: skipped", deny, notExempt, namespaceObj("default", exempt), nil, true, false},
		{"committed and proposal exempt: skipped", deny, notExempt, namespaceObj("default", exempt), namespaceObj("default", exempt), true, false},
		{"unknown, proposal exempt: unknown, failurePolicy", deny, notExempt, nil, namespaceObj("default", exempt), false, true},
		{"unknown, proposal selected: applies", deny, onlyProd, nil, namespaceObj("default", map[string]string{"env": "prod"}), false, false},
		{"committed dev, proposal prod: applies", deny, onlyProd, namespaceObj("default", map[string]string{"env": "dev"}), namespaceObj("default", map[string]string{"env": "prod"}), false, false},
		{"committed prod, proposal dev: applies", deny, onlyProd, namespaceObj("default", map[string]string{"env": "prod"}), namespaceObj("default", map[string]string{"env": "dev"}), false, false},
		{"namespaceObject is the committed object", readsNamespace, nil, namespaceObj("default", map[string]string{"env": "dev"}), nil, true, false},
		// Issue 30, finding 1: the committed object is older than the
		// change the gateway allowed; it is never shown, the binding
		// follows its failurePolicy.
		{"namespaceObject superseded by a proposal is unknown", readsNamespace, nil, namespaceObj("default", map[string]string{"env": "prod"}), namespaceObj("default", map[string]string{"env": "dev"}), false, true},
		{"namespaceObject superseded by a proposal is unknown even if it would allow", readsNamespace, nil, namespaceObj("default", map[string]string{"env": "dev"}), namespaceObj("default", map[string]string{"env": "prod"}), false, true},
		{"namespaceObject with a proposal that changes nothing is the committed object", readsNamespace, nil, namespaceObj("default", map[string]string{"env": "dev"}), namespaceObj("default", map[string]string{"env": "dev"}), true, false},
		{"namespaceObject of a proposal alone is unknown", readsNamespace, nil, nil, namespaceObj("default", map[string]string{"env": "dev"}), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []bindingOpt
			if tt.sel != nil {
				opts = append(opts, matchResources(tt.sel))
			}
			s := Compile(Objects{Policies: pols(tt.p), Bindings: binds(binding("b", "p", opts...))}, CompileOptions{})
			m := provisionalMap{committed: NamespaceMap{}, provisional: NamespaceMap{}}
			if tt.committed != nil {
				m.committed["default"] = tt.committed
			}
			if tt.provisional != nil {
				m.provisional["default"] = tt.provisional
			}
			res := s.Evaluate(context.Background(), Validating, podRequest("CREATE"), WithNamespaces(m))
			if res.Allowed != tt.wantAllowed || (res.UnknownNamespace != "") != tt.wantUnknown ||
				res.PendingNamespace != (tt.wantUnknown && tt.committed != nil) {
				t.Fatalf("allowed %v, unknown namespace %q (pending %v); want allowed %v, unknown %v", res.Allowed, res.UnknownNamespace, res.PendingNamespace, tt.wantAllowed, tt.wantUnknown)
			}
		})
	}
}
