package chart

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// object is one rendered manifest: typed when client-go's scheme knows its
// kind, else only its unstructured form (the monitoring and cert-manager
// kinds, whose CRDs the cluster provides).
type object struct {
	gvk   schema.GroupVersionKind
	name  string
	typed runtime.Object
	u     map[string]any
}

// foreignKinds are the kinds of CRDs the chart may render; everything else
// must be a kind of client-go's scheme.
var foreignKinds = map[schema.GroupVersionKind]bool{
	{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}: true,
	{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"}: true,
	{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}:          true,
}

var strict = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

// decodeAll splits helm's output into documents and decodes each strictly:
// an unknown or duplicated field, or a wrong type, fails the test.
func decodeAll(t *testing.T, out string) []object {
	t.Helper()
	var objs []object
	for _, doc := range strings.Split(out, "\n---") {
		doc = strings.TrimSpace(doc)
		if doc == "" || onlyComments(doc) {
			continue
		}
		var u map[string]any
		if err := yaml.UnmarshalStrict([]byte(doc), &u); err != nil {
			t.Fatalf("rendered YAML does not parse: %v\n%s", err, doc)
		}
		if len(u) == 0 {
			continue
		}
		uo := &unstructured.Unstructured{Object: u}
		gvk := uo.GroupVersionKind()
		o := object{gvk: gvk, name: uo.GetName(), u: u}
		if foreignKinds[gvk] {
			if o.name == "" {
				t.Fatalf("%s without a name", gvk.Kind)
			}
			objs = append(objs, o)
			continue
		}
		typed, _, err := strict.Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("%s %q does not decode strictly: %v", gvk.Kind, o.name, err)
		}
		o.typed = typed
		objs = append(objs, o)
	}
	return objs
}

func onlyComments(doc string) bool {
	for _, l := range strings.Split(doc, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// find returns the objects of a kind.
func find(objs []object, kind string) []object {
	var out []object
	for _, o := range objs {
		if o.gvk.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

func one(t *testing.T, objs []object, kind string) object {
	t.Helper()
	found := find(objs, kind)
	if len(found) != 1 {
		t.Fatalf("%d %s objects rendered, want 1", len(found), kind)
	}
	return found[0]
}
