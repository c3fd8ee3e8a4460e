package objpatch

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// typedJSON is m decoded into the Go type of gvk and encoded back: what a
// read of the typed view sees, as JSON.
func typedJSON(t *testing.T, gvk schema.GroupVersionKind, m map[string]any) map[string]any {
	t.Helper()
	obj, err := clientgoscheme.Scheme.New(gvk)
	if err != nil {
		t.Fatal(err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(runtime.DeepCopyJSON(m), obj); err != nil {
		t.Fatal(err)
	}
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// at is the value at a dotted path of m, and whether it is there.
func at(m map[string]any, path string) (any, bool) {
	var cur any = m
	for _, f := range strings.Split(path, ".") {
		x, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = x[f]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// TestKeepPaths holds KeepPaths to its promise: the typed view of the cut
// object shows every path it keeps as the typed view of the whole object
// does, present or absent, and drops what no path reads.
func TestKeepPaths(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	pod, ok := Canonicalize(baselinePodJSON(t), nil, gvk)
	if !ok {
		t.Fatal("the baseline Pod is declined")
	}
	whole := typedJSON(t, gvk, pod)
	for _, tc := range []struct {
		name  string
		paths []string
		gone  []string // paths the cut object no longer holds
	}{
		{"labels", []string{"metadata.labels"}, []string{"spec", "metadata.name"}},
		{"a nested struct", []string{"spec.securityContext.runAsNonRoot", "metadata.name"}, []string{"spec.containers", "metadata.labels"}},
		{"a list whole", []string{"spec.containers"}, []string{"spec.volumes", "metadata"}},
		{"a map whole below", []string{"metadata.labels.app"}, []string{"metadata.name"}},
		{"absent fields", []string{"status.podIP", "spec.nodeName"}, []string{"spec.containers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fp FieldPaths
			for _, p := range tc.paths {
				fp.Add(strings.Split(p, "."))
			}
			cut, ok := KeepPaths(pod, &fp, gvk)
			if !ok {
				t.Fatal("declined")
			}
			view := typedJSON(t, gvk, cut)
			for _, p := range tc.paths {
				w, wok := at(whole, p)
				g, gok := at(view, p)
				if wok != gok || !reflect.DeepEqual(g, w) {
					t.Errorf("%s: cut %v (%v), whole %v (%v)", p, g, gok, w, wok)
				}
			}
			for _, p := range tc.gone {
				if v, ok := at(cut, p); ok {
					t.Errorf("%s kept: %v", p, v)
				}
			}
		})
	}
	var all FieldPaths
	all.Add(nil)
	if _, ok := KeepPaths(pod, &all, gvk); ok {
		t.Error("the whole object is cut")
	}
	if _, ok := KeepPaths(pod, &FieldPaths{}, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}); ok {
		t.Error("a kind outside the scheme is cut")
	}
}
