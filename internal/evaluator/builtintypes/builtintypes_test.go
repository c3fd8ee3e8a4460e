package builtintypes

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestBuiltinTypeConverter: every published built-in group-version has a
// converter, which types the kinds of its document only.
func TestBuiltinTypeConverter(t *testing.T) {
	tests := []struct {
		gvk     schema.GroupVersionKind
		tc      bool   // a converter at all
		typeErr string // ObjectToTyped's error
	}{
		{gvk: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, tc: true},
		{gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, tc: true},
		// In client-go's scheme, not in its models: from the v1 document.
		{gvk: schema.GroupVersionKind{Version: "v1", Kind: "Binding"}, tc: true},
		{gvk: schema.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenReview"}, tc: true},
		// Not in their group-version's document.
		{gvk: schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, tc: true,
			typeErr: "no corresponding type for autoscaling/v1, Kind=Scale"},
		{gvk: schema.GroupVersionKind{Version: "v1", Kind: "PodExecOptions"}, tc: true,
			typeErr: "no corresponding type for /v1, Kind=PodExecOptions"},
		// client-go's models have it; the apiserver's policy/v1 document
		// does not.
		{gvk: schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}, tc: true,
			typeErr: "no corresponding type for policy/v1, Kind=Eviction"},
		{gvk: schema.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"}, tc: true,
			typeErr: "no corresponding type for authentication.k8s.io/v1, Kind=TokenRequest"},
		// Not published by a v1.37 apiserver, or a custom resource.
		{gvk: schema.GroupVersionKind{Group: "extensions", Version: "v1beta1", Kind: "Deployment"}},
		{gvk: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}},
	}
	for _, tc := range tests {
		t.Run(tc.gvk.String(), func(t *testing.T) {
			conv := For(tc.gvk)
			if (conv != nil) != tc.tc {
				t.Fatalf("converter %v, want %v", conv != nil, tc.tc)
			}
			if conv == nil {
				return
			}
			stub := &unstructured.Unstructured{}
			stub.SetGroupVersionKind(tc.gvk)
			_, err := conv.ObjectToTyped(stub)
			if got := errString(err); got != tc.typeErr {
				t.Fatalf("ObjectToTyped: %q, want %q", got, tc.typeErr)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
