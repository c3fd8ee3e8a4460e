package evaluator

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// gadgetCRD is a CRD as kubectl get crd -o json prints it, with a map,
// a keyed list and an atomic list.
const gadgetCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"gadgets.example.com","uid":"u1","resourceVersion":"7"},
 "spec":{"group":"example.com","scope":"Namespaced",
  "names":{"kind":"Gadget","plural":"gadgets","singular":"gadget","listKind":"GadgetList"},
  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
   "spec":{"type":"object","properties":{
    "size":{"type":"integer"},
    "tags":{"type":"object","additionalProperties":{"type":"string"}},
    "ports":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],
     "items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"port":{"type":"integer"}}}},
    "args":{"type":"array","x-kubernetes-list-type":"atomic","items":{"type":"string"}}}}}}}}]}}`

// schemaInventory is an inventory with whole CRDs, as the webhook's is.
type schemaInventory struct {
	NamespaceMap
	crds map[schema.GroupResource]string
}

func (c schemaInventory) CRDObject(gr schema.GroupResource) ([]byte, string, bool) {
	js, ok := c.crds[gr]
	return []byte(js), "key-" + js, ok
}

func gadgetRequest() *Request {
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}
	obj := map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g", "namespace": "default"},
		"spec": map[string]any{"size": int64(1), "tags": map[string]any{"a": "1"},
			"ports": []any{map[string]any{"name": "http", "port": int64(80)}}, "args": []any{"-v"}}}
	return &Request{Kind: gvk, Resource: gvr, RequestKind: gvk, RequestResource: gvr,
		Namespace: "default", Name: "g", Operation: "CREATE", Object: obj}
}

// A custom resource is merged with its CRD's schema when the inventory
// has it, and answered as the plugin answers a kind without a schema (503,
// counted as a missing CRD) when it does not.
func TestMutateCustomResource(t *testing.T) {
	gadgets := schema.GroupResource{Group: "example.com", Resource: "gadgets"}
	withCRD := schemaInventory{crds: map[schema.GroupResource]string{gadgets: gadgetCRD}}
	stale := schemaInventory{crds: map[schema.GroupResource]string{gadgets: strings.Replace(gadgetCRD, `"name":"v1"`, `"name":"v2"`, 1)}}
	tests := []struct {
		name       string
		inv        NamespaceLookup
		mutation   mutation
		ignore     bool
		wantPatch  string
		wantDeny   string
		missingCRD bool
	}{
		{name: "map merge", inv: withCRD,
			mutation:  applyConfig(`Object{spec: Object.spec{tags: {"b": "2"}}}`),
			wantPatch: `[{"op":"add","path":"/spec/tags/b","value":"2"}]`},
		{name: "keyed list merge", inv: withCRD,
			mutation:  applyConfig(`Object{spec: Object.spec{ports: [Object.spec.ports{name: "http", port: 8080}, Object.spec.ports{name: "m", port: 9}]}}`),
			wantPatch: `[{"op":"replace","path":"/spec/ports/0/port","value":8080},{"op":"add","path":"/spec/ports/1","value":{"name":"m","port":9}}]`},
		{name: "atomic list refused", inv: withCRD,
			mutation: applyConfig(`Object{spec: Object.spec{args: ["-q"]}}`),
			wantDeny: "may not mutate atomic arrays"},
		{name: "unknown field refused", inv: withCRD,
			mutation: applyConfig(`Object{spec: Object.spec{bogus: 1}}`),
			wantDeny: "field not declared in schema"},
		{name: "no CRD: 503, counted", inv: NamespaceMap{},
			mutation: applyConfig(`Object{spec: Object.spec{size: 2}}`),
			wantDeny: "Resource kind example.com/v1, Kind=Gadget not found", missingCRD: true},
		{name: "no CRD under failurePolicy Ignore: still 503", inv: NamespaceMap{}, ignore: true,
			mutation: jsonPatch(`[JSONPatch{op: "replace", path: "/spec/size", value: 2}]`),
			wantDeny: "Resource kind example.com/v1, Kind=Gadget not found", missingCRD: true},
		{name: "a CRD without the version is missing", inv: stale,
			mutation: applyConfig(`Object{spec: Object.spec{size: 2}}`),
			wantDeny: "Resource kind example.com/v1, Kind=Gadget not found", missingCRD: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, b := newMAP("p", "", tc.mutation)
			p.Spec.MatchConstraints.ResourceRules = []admissionregistrationv1.NamedRuleWithOperations{
				rule([]string{"CREATE"}, []string{"example.com"}, []string{"v1"}, []string{"gadgets"})}
			if tc.ignore {
				ignore := admissionregistrationv1.Ignore
				p.Spec.FailurePolicy = &ignore
			}
			s := Compile(Objects{MutatingPolicies: []*admissionregistrationv1.MutatingAdmissionPolicy{p},
				MutatingBindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b}}, CompileOptions{})
			res := s.Evaluate(context.Background(), Mutating, gadgetRequest(), WithNamespaces(tc.inv))
			if res.MissingCRD != tc.missingCRD {
				t.Errorf("MissingCRD = %v, want %v", res.MissingCRD, tc.missingCRD)
			}
			if tc.wantDeny != "" {
				if res.Allowed || !strings.Contains(res.Status.Message, tc.wantDeny) {
					t.Fatalf("want a denial with %q, got %+v %+v", tc.wantDeny, res.Status, res.Bindings)
				}
				return
			}
			if !res.Allowed || string(res.Patch) != tc.wantPatch {
				t.Fatalf("allowed %v patch %s, want %s; status %+v", res.Allowed, res.Patch, tc.wantPatch, res.Status)
			}
		})
	}
}

// A request does not build the converter an earlier one built under the
// same key; another key gets its own.
func TestCRDTypeConverterCached(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}
	a := crdTypeConverter([]byte(gadgetCRD), "cache-test-a", gvk)
	if !a.serves || a.tc == nil {
		t.Fatalf("no converter for the Gadget CRD: %+v", a)
	}
	if again := crdTypeConverter([]byte(gadgetCRD), "cache-test-a", gvk); again != a {
		t.Error("the same CRD content built twice")
	}
	if other := crdTypeConverter([]byte(gadgetCRD), "cache-test-b", gvk); other == a {
		t.Error("another CRD key shares the converter")
	}
	// Requests that need a converter at once build it once (go test -race).
	got := make(chan *crdConverter)
	for range 4 {
		go func() { got <- crdTypeConverter([]byte(gadgetCRD), "cache-test-c", gvk) }()
	}
	first := <-got
	for range 3 {
		if c := <-got; c != first || c.tc == nil {
			t.Fatalf("concurrent requests got %p and %p", first, c)
		}
	}
}
