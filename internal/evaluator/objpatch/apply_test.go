package objpatch

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// builtinConverter is the type converter of the built-in kinds, the one
// the evaluator merges them with.
var builtinConverter = sync.OnceValue(func() managedfields.TypeConverter {
	return applyconfigurations.NewTypeConverter(clientgoscheme.Scheme)
})

// TestServerSideApplyMatchesMerge holds ServerSideApply to
// structured-merge-diff's merge of the whole objects, as the plugin runs it,
// on random keyed lists (the order of the result is the merge's subtlest
// part), nested maps and scalars.
func TestServerSideApplyMatchesMerge(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	tc := builtinConverter()
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "b", "c", "d", "e", "f"}
	containers := func(maxN int, image string) []any {
		perm := rng.Perm(len(names))
		n := rng.IntN(maxN + 1)
		out := make([]any, 0, n)
		for _, i := range perm[:n] {
			c := map[string]any{"name": names[i]}
			if image != "" {
				c["image"] = image + names[i]
			}
			if rng.IntN(3) == 0 {
				c["env"] = []any{map[string]any{"name": "E" + names[i], "value": image}}
			}
			out = append(out, c)
		}
		return out
	}
	fast, compared := 0, 0
	for i := range 500 {
		live := map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "p", "labels": map[string]any{"app": "x"}},
			"spec":     map[string]any{"containers": containers(5, "live-"), "restartPolicy": "Always"}}
		patch := map[string]any{"spec": map[string]any{"containers": containers(4, "")}}
		if rng.IntN(2) == 0 {
			patch["metadata"] = map[string]any{"labels": map[string]any{"team": "t"}}
		}
		pj, _ := json.Marshal(patch)
		lt, err := tc.ObjectToTyped(&unstructured.Unstructured{Object: live}, typed.AllowDuplicates)
		if err != nil {
			t.Fatal(err)
		}
		pu := &unstructured.Unstructured{Object: copyJSON(patch)}
		pu.SetGroupVersionKind(gvk)
		pt, err := tc.ObjectToTyped(pu)
		if err != nil {
			t.Fatal(err)
		}
		want, err := lt.Merge(pt)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := ServerSideApply(tc, live, copyJSON(patch), gvk, false)
		if !ok {
			continue
		}
		fast++
		compared++
		w := want.AsValue().Unstructured()
		if !reflect.DeepEqual(any(got), w) {
			g, _ := json.Marshal(got)
			wj, _ := json.Marshal(w)
			t.Fatalf("case %d: patch %s\napplyFast %s\nmerge     %s", i, pj, g, wj)
		}
	}
	if fast < 400 {
		t.Errorf("ServerSideApply answered %d of 500", fast)
	}
	t.Logf("%d compared", compared)
}

func copyJSON(m map[string]any) map[string]any {
	var out map[string]any
	b, _ := json.Marshal(m)
	_ = json.Unmarshal(b, &out)
	return out
}

// TestLiveConvertsToTyped holds liveConvertsToTyped to the plugin's
// conversion of the live object: whatever that refuses, it must refuse (it
// may refuse more: items without keys, which the conversion accepts, it
// leaves to the exact path), and a plain Pod it must accept.
func TestLiveConvertsToTyped(t *testing.T) {
	tc := builtinConverter()
	pt, err := tc.ObjectToTyped(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod"}})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "labels": map[string]any{"a": "b"}}, "spec": spec}
	}
	for name, obj := range map[string]map[string]any{
		"fine":                     pod(map[string]any{"containers": []any{map[string]any{"name": "a", "env": []any{map[string]any{"name": "E"}}}}}),
		"pull secret without name": pod(map[string]any{"imagePullSecrets": []any{map[string]any{}}}),
		"env without name":         pod(map[string]any{"containers": []any{map[string]any{"name": "a", "env": []any{map[string]any{"value": "x"}}}}}),
		"owner without uid":        {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"ownerReferences": []any{map[string]any{"name": "x"}}}},
		"null container":           pod(map[string]any{"containers": []any{nil}}),
	} {
		_, werr := tc.ObjectToTyped(&unstructured.Unstructured{Object: obj}, typed.AllowDuplicates)
		got := liveConvertsToTyped(pt.Schema(), pt.TypeRef(), obj)
		if got && werr != nil || name == "fine" && !got {
			t.Errorf("%s: liveConvertsToTyped %v, conversion error %v", name, got, werr)
		}
		if name == "null container" && werr == nil {
			t.Errorf("the conversion accepts a null keyed item: the case tests nothing")
		}
	}
}
