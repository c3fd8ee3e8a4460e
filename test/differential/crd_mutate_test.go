package differential

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapiv3"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/handler3"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// gadgetCRDJSON is the Gadget CRD as kubectl get crd -o json prints it:
// a map, keyed, set and atomic lists, an atomic map, a field that keeps
// unknown fields, an embedded resource and a status.
const gadgetCRDJSON = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"gadgets.example.com","uid":"6a1b","resourceVersion":"42"},
 "spec":{"group":"example.com","scope":"Namespaced",
  "names":{"kind":"Gadget","plural":"gadgets","singular":"gadget","listKind":"GadgetList"},
  "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
   "schema":{"openAPIV3Schema":{"type":"object","properties":{
    "spec":{"type":"object","properties":{
     "size":{"type":"integer"},
     "mode":{"type":"string"},
     "tags":{"type":"object","additionalProperties":{"type":"string"}},
     "ports":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],
      "items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"port":{"type":"integer"}}}},
     "hosts":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}},
     "args":{"type":"array","x-kubernetes-list-type":"atomic","items":{"type":"string"}},
     "selector":{"type":"object","x-kubernetes-map-type":"atomic","additionalProperties":{"type":"string"}},
     "config":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
     "template":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true}}},
    "status":{"type":"object","properties":{"ready":{"type":"boolean"}}}}}}}],
  "conversion":{"strategy":"None"}},
 "status":{"storedVersions":["v1"],"acceptedNames":{"kind":"Gadget","plural":"gadgets"},
  "conditions":[{"type":"Established","status":"True","reason":"InitialNamesAccepted"}]}}`

// partCRDJSON is a CRD of the same group with two versions whose schemas
// differ: a v2 request is merged with the v2 schema, and v1 shares its
// group-version's document with the Gadget.
const partCRDJSON = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"parts.example.com","uid":"7c2d"},
 "spec":{"group":"example.com","scope":"Namespaced",
  "names":{"kind":"Part","plural":"parts","singular":"part","listKind":"PartList"},
  "versions":[
   {"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
    "spec":{"type":"object","properties":{"count":{"type":"integer"}}}}}}},
   {"name":"v2","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","properties":{
    "spec":{"type":"object","properties":{"amount":{"type":"string"},
     "slots":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["id"],
      "items":{"type":"object","required":["id"],"properties":{"id":{"type":"integer"},"size":{"type":"string"}}}}}}}}}}]},
 "status":{"storedVersions":["v1"],"conditions":[{"type":"Established","status":"True"}]}}`

var (
	gadgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	gadgetGVK  = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}
	partsV2GVR = schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "parts"}
	partV2GVK  = schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Part"}
)

// crdOpenAPI serves the OpenAPI v3 documents of crds as a kube-apiserver
// does, to the plugin's type converter manager: the apiextensions-apiserver's
// openapiv3 controller builds them from the established CRDs and publishes
// them on kube-openapi's handler3 service, which client-go's discovery
// client reads over HTTP (on 127.0.0.1).
func crdOpenAPI(tb testing.TB, crds ...*apiextensionsv1.CustomResourceDefinition) openapi.Client {
	tb.Helper()
	client := apiextensionsfake.NewSimpleClientset()
	for _, c := range crds {
		c = c.DeepCopy()
		// The apiserver stores CRDs defaulted.
		apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(c)
		if err := client.Tracker().Add(c); err != nil {
			tb.Fatal(err)
		}
	}
	factory := apiextensionsinformers.NewSharedInformerFactory(client, 0)
	ctrl := openapiv3.NewController(factory.Apiextensions().V1().CustomResourceDefinitions())
	svc := handler3.NewOpenAPIService()
	mux := http.NewServeMux()
	if err := svc.RegisterOpenAPIV3VersionedService("/openapi/v3", prefixMux{mux}); err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	stop := make(chan struct{})
	tb.Cleanup(func() {
		close(stop)
		srv.Close()
	})
	factory.Start(stop)
	go ctrl.Run(svc, stop)
	oapi := discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srv.URL}).OpenAPIV3()
	for _, c := range crds {
		for _, v := range c.Spec.Versions {
			path := fmt.Sprintf("apis/%s/%s", c.Spec.Group, v.Name)
			testutil.Eventually(tb, 0, "the OpenAPI document of "+path, func() bool {
				paths, err := oapi.Paths()
				_, ok := paths[path]
				return err == nil && ok
			})
		}
	}
	return oapi
}

// prefixMux is a ServeMux as handler3 registers on it: a pattern with a
// trailing slash matches its whole subtree.
type prefixMux struct{ *http.ServeMux }

func (m prefixMux) HandlePrefix(path string, h http.Handler) { m.Handle(path, h) }

// crdSchemaInventory is a cluster's inventory holding whole CRDs, as the
// webhook's is.
type crdSchemaInventory struct {
	evaluator.NamespaceMap
	crds map[schema.GroupResource][]byte
}

func (i crdSchemaInventory) CRDObject(gr schema.GroupResource) ([]byte, string, bool) {
	js, ok := i.crds[gr]
	sum := sha256.Sum256(js)
	return js, hex.EncodeToString(sum[:]), ok
}

func gadget() map[string]any {
	return map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "web", "namespace": "default", "labels": map[string]any{"app": "web"}},
		"spec": map[string]any{"size": int64(1), "tags": map[string]any{"a": "1"},
			"ports":    []any{map[string]any{"name": "http", "port": int64(80)}},
			"hosts":    []any{"a", "b"},
			"args":     []any{"-v"},
			"selector": map[string]any{"app": "web"},
			"config":   map[string]any{"x": map[string]any{"y": int64(1)}},
			"template": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "t"}}}}
}

func gadgetRequest(op string, obj, old map[string]any) *request {
	r := mrequest(admissionregistrationv1.OperationType(op), nil, nil, obj, old)
	r.evalReq.Kind, r.evalReq.RequestKind, r.evalReq.Resource, r.evalReq.RequestResource = gadgetGVK, gadgetGVK, gadgetsGVR, gadgetsGVR
	return r
}

// crdMutateCase is a case over the Gadget custom resource; want says what
// the plugin must do for the case to test what it is named for.
type crdMutateCase struct {
	name string
	w    *world
	r    *request
	want string // "changed", "unchanged" or "denied"
}

func crdMutateCases() []crdMutateCase {
	create := func() *request { return gadgetRequest("CREATE", gadget(), nil) }
	spec := func(fields string) string { return "Object{spec: Object.spec{" + fields + "}}" }
	return []crdMutateCase{
		{"map merge", mworld(mpol("p", ac(spec(`tags: {"b": "2"}`)))), create(), "changed"},
		{"map merge, same value", mworld(mpol("p", ac(spec(`tags: {"a": "1"}`)))), create(), "unchanged"},
		{"keyed list merge", mworld(mpol("p", ac(spec(`ports: [Object.spec.ports{name: "http", port: 8080}, Object.spec.ports{name: "metrics", port: 9090}]`)))), create(), "changed"},
		{"set list merge", mworld(mpol("p", ac(spec(`hosts: ["b", "c"]`)))), create(), "changed"},
		{"atomic list refused", mworld(mpol("p", ac(spec(`args: ["-q"]`)))), create(), "denied"},
		{"atomic list refused, ignored", mworld(mpol("p", ignore, ac(spec(`args: ["-q"]`)))), create(), "unchanged"},
		{"atomic map refused", mworld(mpol("p", ac(spec(`selector: {"tier": "front"}`)))), create(), "denied"},
		{"preserve-unknown-fields merge", mworld(mpol("p", ac(spec(`config: Object.spec.config{z: 2, x: {"w": 3}}`)))), create(), "changed"},
		{"embedded resource merge", mworld(mpol("p", ac(spec(`template: Object.spec.template{metadata: Object.spec.template.metadata{labels: {"t": "1"}}, data: {"k": "v"}}`)))), create(), "changed"},
		{"unknown field refused", mworld(mpol("p", ac(spec(`bogus: 1`)))), create(), "denied"},
		{"unknown field refused, ignored", mworld(mpol("p", ignore, ac(spec(`bogus: 1`)))), create(), "unchanged"},
		{"wrong type refused", mworld(mpol("p", ac(spec(`size: "big"`)))), create(), "denied"},
		{"wrong type refused, ignored", mworld(mpol("p", ignore, ac(spec(`size: "big"`)))), create(), "unchanged"},
		{"scalars", mworld(mpol("p", ac(spec(`size: 5, mode: "fast"`)))), create(), "changed"},
		{"labels", mworld(mpol("p", ac(`Object{metadata: Object.metadata{labels: {"team": "a"}}}`))), create(), "changed"},
		{"status", mworld(mpol("p", ac(`Object{status: Object.status{ready: true}}`))), create(), "changed"},
		{"json patch", mworld(mpol("p", jp(`[
			JSONPatch{op: "add", path: "/spec/tags/" + jsonpatch.escapeKey("x/y"), value: "1"},
			JSONPatch{op: "replace", path: "/spec/size", value: 3},
			JSONPatch{op: "add", path: "/spec/hosts/-", value: "z"},
			JSONPatch{op: "remove", path: "/spec/args/0"}]`))), create(), "changed"},
		// The plugin decodes a JSON patch's result into an unstructured
		// object, which takes anything: the custom resource handler prunes
		// and validates it later, after admission.
		{"json patch unknown field", mworld(mpol("p", jp(`[JSONPatch{op: "add", path: "/spec/bogus", value: 1}]`))), create(), "changed"},
		{"json patch wrong type", mworld(mpol("p", jp(`[JSONPatch{op: "replace", path: "/spec/size", value: "big"}]`))), create(), "changed"},
		{"apply then json patch", mworld(
			mpol("a", ac(spec(`tags: {"b": "2"}`))),
			mpol("b", jp(`[JSONPatch{op: "add", path: "/spec/tags/c", value: object.spec.tags["b"] + "3"}]`))), create(), "changed"},
		{"update reads the old object", mworld(mpol("p", ac(spec(`size: oldObject.spec.size + 10`)))),
			gadgetRequest("UPDATE", gadget(), gadget()), "changed"},
		{"reinvoked non-idempotent keyed list", mworld(mpol("p", ifNeeded,
			ac(spec(`ports: [Object.spec.ports{name: "p" + string(size(object.spec.ports)), port: 1}]`)))), create(), "changed"},
		{"typed view is JSON for a custom resource", mworld(mpol("p", mcond("t", "true"), ac(spec(`mode: string(object.spec.tags == {"a": "1"})`)))), create(), "changed"},
		{"second version, its own schema", mworld(mpol("p", ac(spec(`amount: "3", slots: [Object.spec.slots{id: 1, size: "L"}, Object.spec.slots{id: 2}]`)))), partRequest(), "changed"},
		{"second version, a field of the first refused", mworld(mpol("p", ac(spec(`count: 3`)))), partRequest(), "denied"},
	}
}

func partRequest() *request {
	r := mrequest("CREATE", nil, nil, map[string]any{"apiVersion": "example.com/v2", "kind": "Part",
		"metadata": map[string]any{"name": "web", "namespace": "default"},
		"spec":     map[string]any{"slots": []any{map[string]any{"id": int64(1), "size": "S"}}}}, nil)
	r.evalReq.Kind, r.evalReq.RequestKind, r.evalReq.Resource, r.evalReq.RequestResource = partV2GVK, partV2GVK, partsV2GVR, partsV2GVR
	return r
}

// TestMutateCustomResourceDifferential holds Snapshot.Mutate, with the
// Gadget and Part CRDs in the cluster's inventory, to the plugin reading
// their schemas from its apiserver's OpenAPI v3 documents.
func TestMutateCustomResourceDifferential(t *testing.T) {
	var gadgets, parts apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal([]byte(gadgetCRDJSON), &gadgets); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(partCRDJSON), &parts); err != nil {
		t.Fatal(err)
	}
	oapi := crdOpenAPI(t, &gadgets, &parts)
	for _, tc := range crdMutateCases() {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range tc.w.mutatingPolicies {
				evaluator.SetMutatingPolicyDefaults(p)
			}
			for _, b := range tc.w.mutatingBindings {
				evaluator.SetMutatingBindingDefaults(b)
			}
			p := newMutatingPluginWith(t, tc.w, oapi)
			defer p.close()
			testutil.Eventually(t, 0, "the plugin to read the CRDs' schemas", func() bool {
				return p.types.GetTypeConverter(gadgetGVK) != nil && p.types.GetTypeConverter(partV2GVK) != nil
			})
			snap := compileMutating(tc.w)
			want := p.mutate(t, tc.r)
			inv := crdSchemaInventory{NamespaceMap: tc.w.inventory,
				crds: map[schema.GroupResource][]byte{gadgetsGVR.GroupResource(): []byte(gadgetCRDJSON),
					partsV2GVR.GroupResource(): []byte(partCRDJSON)}}
			res := snap.Evaluate(context.Background(), evaluator.Mutating, tc.r.evalReq, evaluator.WithNamespaces(inv))
			got := evaluatorMutation(t, tc.r, res)
			compareMutation(t, tc.r, res, want, got)
			if res.MissingCRD {
				t.Error("MissingCRD with the CRD in the inventory")
			}
			did := "unchanged"
			switch {
			case !want.allowed:
				did = "denied"
			case want.changed:
				did = "changed"
			}
			if tc.want != "" && did != tc.want {
				t.Errorf("the plugin %s the object, the case is for %s: status %s", did, tc.want, js(want.status))
			}
			t.Logf("plugin %s; patch %s; status %s", did, res.Patch, js(want.status))
		})
	}
}
