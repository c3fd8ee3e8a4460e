package objpatch

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// typedRoundTrip is what canonicalValue reproduces: the object decoded into
// its Go type and encoded back, as the plugin holds it.
func typedRoundTrip(t *testing.T, gvk schema.GroupVersionKind, m map[string]any) (map[string]any, error) {
	t.Helper()
	obj, err := clientgoscheme.Scheme.New(gvk)
	if err != nil {
		t.Fatal(err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(runtime.DeepCopyJSON(m), obj); err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

func baselinePodJSON(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile("../../../samples/baseline/pod.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return normalizeNumbers(m).(map[string]any)
}

// normalizeNumbers makes integral float64s int64, as the gateway's decoder
// gives them.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalizeNumbers(e)
		}
	case float64:
		if x == float64(int64(x)) {
			return int64(x)
		}
	}
	return v
}

func TestCanonicalizeMatchesTypedRoundTrip(t *testing.T) {
	podGVK := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	container := func(extra map[string]any) map[string]any {
		c := map[string]any{"name": "c", "image": "nginx"}
		for k, v := range extra {
			c[k] = v
		}
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"},
			"spec": map[string]any{"containers": []any{c}}}
	}
	cases := map[string]map[string]any{
		"baseline":              baselinePodJSON(t),
		"empty":                 {},
		"quantity half":         container(map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": "0.5"}}}),
		"quantity milli":        container(map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": "1000m", "memory": int64(1024)}}}),
		"quantity null":         container(map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": nil}}}),
		"quantity float":        container(map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": 0.5}}}),
		"quantity bad":          container(map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": "lots"}}}),
		"omitempty zero":        container(map[string]any{"imagePullPolicy": "", "stdin": false, "ports": []any{}}),
		"int as float":          container(map[string]any{"ports": []any{map[string]any{"containerPort": 80.0}}}),
		"int fraction":          container(map[string]any{"ports": []any{map[string]any{"containerPort": 80.5}}}),
		"int32 overflow":        container(map[string]any{"ports": []any{map[string]any{"containerPort": int64(1) << 33}}}),
		"int as string":         container(map[string]any{"ports": []any{map[string]any{"containerPort": "80"}}}),
		"unknown field":         container(map[string]any{"bogus": "x"}),
		"wrong type":            container(map[string]any{"image": int64(1)}),
		"null struct":           container(map[string]any{"resources": nil, "securityContext": nil}),
		"null list item":        container(map[string]any{"env": []any{nil}}),
		"intorstring":           container(map[string]any{"livenessProbe": map[string]any{"httpGet": map[string]any{"port": "http"}}}),
		"intorstring int":       container(map[string]any{"livenessProbe": map[string]any{"httpGet": map[string]any{"port": int64(8080)}}}),
		"intorstring float":     container(map[string]any{"livenessProbe": map[string]any{"httpGet": map[string]any{"port": 8080.0}}}),
		"time":                  {"metadata": map[string]any{"creationTimestamp": "2024-01-02T03:04:05+02:00"}},
		"time bad":              {"metadata": map[string]any{"creationTimestamp": "yesterday"}},
		"labels null value":     {"metadata": map[string]any{"labels": map[string]any{"a": nil}}},
		"float field int":       {"spec": map[string]any{"containers": []any{}}, "status": map[string]any{}},
		"managed fields":        {"metadata": map[string]any{"managedFields": []any{map[string]any{"manager": "x", "fieldsV1": map[string]any{"f:a": map[string]any{}}}}}},
		"bool as string":        container(map[string]any{"stdin": "true"}),
		"grace seconds float":   {"spec": map[string]any{"terminationGracePeriodSeconds": 30.0}},
		"overhead":              {"spec": map[string]any{"overhead": map[string]any{"cpu": "100m"}}},
		"string list with null": {"spec": map[string]any{"containers": []any{map[string]any{"name": "a", "args": []any{"x", nil}}}}},
	}
	// Declined: what the typed decode refuses, and what canonicalValue does not
	// model (unknown fields, which FromUnstructured drops and a strict
	// decode refuses; managedFields' fieldsV1).
	declines := map[string]bool{"quantity bad": true, "int fraction": true, "int as string": true, "unknown field": true,
		"wrong type": true, "int32 overflow": true, "time bad": true, "managed fields": true, "bool as string": true}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			want, werr := typedRoundTrip(t, podGVK, in)
			snapshot := runtime.DeepCopyJSON(in)
			got, ok := Canonicalize(in, nil, podGVK)
			if !reflect.DeepEqual(in, snapshot) {
				t.Fatal("canonicalValue modified its input")
			}
			if ok == declines[name] {
				t.Fatalf("declined %v, want %v (round trip error: %v)", !ok, declines[name], werr)
			}
			if !ok {
				return
			}
			if werr != nil {
				t.Fatalf("canonicalValue accepted what the typed decode refuses: %v", werr)
			}
			if !reflect.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(want)
				t.Fatalf("canonicalValue\n%s\nround trip\n%s", g, w)
			}
			again, ok := Canonicalize(got, nil, podGVK)
			if !ok || !reflect.DeepEqual(again, got) {
				t.Fatal("the canonical form is not a fixed point")
			}
			// What it shares with the canonical form is skipped, and the
			// rest made canonical again.
			again, ok = Canonicalize(in, got, podGVK)
			if !ok || !reflect.DeepEqual(again, got) {
				t.Fatal("canonicalValue against the canonical form differs")
			}
		})
	}
}
