package evaluator

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestMutateScale: a policy on deployments/scale caps a Scale's replicas
// with a JSON patch; an apply configuration fails as in the plugin, whose
// autoscaling/v1 document lacks Scale.
func TestMutateScale(t *testing.T) {
	scale := map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
		"metadata": map[string]any{"name": "web", "namespace": "default"},
		"spec":     map[string]any{"replicas": int64(9)}, "status": map[string]any{"replicas": int64(2)}}
	gvk := schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	tests := []struct {
		name      string
		m         mutation
		wantPatch string
		wantDeny  string
	}{
		{"json patch", jsonPatch(`object.spec.replicas > 5 ? [JSONPatch{op: "replace", path: "/spec/replicas", value: 5}] : []`),
			`[{"op":"replace","path":"/spec/replicas","value":5}]`, ""},
		{"apply configuration", applyConfig(`Object{spec: Object.spec{replicas: 5}}`), "",
			"error applying patch: failed to convert patch object to typed object: no corresponding type for autoscaling/v1, Kind=Scale"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, b := newMAP("cap", admissionregistrationv1.NeverReinvocationPolicy, tc.m)
			p.Spec.MatchConstraints.ResourceRules = []admissionregistrationv1.NamedRuleWithOperations{
				rule([]string{"UPDATE"}, []string{"apps"}, []string{"v1"}, []string{"deployments/scale"})}
			s := Compile(Objects{MutatingPolicies: []*admissionregistrationv1.MutatingAdmissionPolicy{p},
				MutatingBindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b}}, CompileOptions{})
			r := &Request{Kind: gvk, Resource: gvr, SubResource: "scale", RequestKind: gvk, RequestResource: gvr, RequestSubResource: "scale",
				Namespace: "default", Name: "web", Operation: "UPDATE", Object: scale, OldObject: scale}
			res := s.Evaluate(context.Background(), Mutating, r)
			if tc.wantDeny != "" {
				if res.Allowed || res.Status == nil || !strings.Contains(res.Status.Message, tc.wantDeny) {
					t.Fatalf("want a denial with %q, got %+v", tc.wantDeny, res.Status)
				}
				return
			}
			if !res.Allowed || string(res.Patch) != tc.wantPatch {
				t.Fatalf("allowed %v status %+v patch %s, want %s", res.Allowed, res.Status, res.Patch, tc.wantPatch)
			}
		})
	}
}
