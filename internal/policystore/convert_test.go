package policystore

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	admissionv1alpha1 "k8s.io/api/admissionregistration/v1alpha1"
	admissionv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

// jsonFields lists every JSON field path of t with its Go kind, following
// structs, pointers, slices and maps.
func jsonFields(t reflect.Type, prefix string, out map[string]reflect.Kind, depth int) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || depth > 12 {
		return
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			jsonFields(f.Type, prefix, out, depth+1)
			continue
		}
		if name == "-" || !f.IsExported() {
			continue
		}
		p := prefix + "." + name
		out[p] = f.Type.Kind()
		jsonFields(f.Type, p, out, depth+1)
	}
}

// The conversion to v1 is a JSON round trip, which copies every field as
// the apiserver's generated conversion does only while the versions have
// the same fields. This fails when a k8s.io/api upgrade adds, drops or
// retypes one: then convert.go needs a field-by-field conversion.
func TestMutatingVersionsHaveV1Fields(t *testing.T) {
	tests := []struct {
		name     string
		v1, from any
	}{
		{"v1beta1 policy", admissionv1.MutatingAdmissionPolicy{}, admissionv1beta1.MutatingAdmissionPolicy{}},
		{"v1alpha1 policy", admissionv1.MutatingAdmissionPolicy{}, admissionv1alpha1.MutatingAdmissionPolicy{}},
		{"v1beta1 binding", admissionv1.MutatingAdmissionPolicyBinding{}, admissionv1beta1.MutatingAdmissionPolicyBinding{}},
		{"v1alpha1 binding", admissionv1.MutatingAdmissionPolicyBinding{}, admissionv1alpha1.MutatingAdmissionPolicyBinding{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, got := map[string]reflect.Kind{}, map[string]reflect.Kind{}
			jsonFields(reflect.TypeOf(tt.v1), "", want, 0)
			jsonFields(reflect.TypeOf(tt.from), "", got, 0)
			if len(want) < 40 {
				t.Fatalf("only %d fields found in v1: the walk is broken", len(want))
			}
			for p, k := range want {
				if got[p] != k {
					t.Errorf("%s: v1 has %s, this version %s", p, k, got[p])
				}
			}
			for p := range got {
				if _, ok := want[p]; !ok {
					t.Errorf("%s: not in v1", p)
				}
			}
		})
	}
}

// A policy and a binding that set every field of the mutating kinds.
const fullMAP = `apiVersion: admissionregistration.k8s.io/VERSION
kind: MutatingAdmissionPolicy
metadata: {name: full, labels: {team: a}, annotations: {note: b}}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    namespaceSelector: {matchLabels: {env: prod}}
    objectSelector: {matchExpressions: [{key: app, operator: Exists}]}
    matchPolicy: Exact
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods], resourceNames: [a], scope: Namespaced}
    excludeResourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods/status], scope: "*"}
  variables:
  - {name: team, expression: "params.data.team"}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration: {expression: "Object{metadata: Object.metadata{labels: {'team': variables.team}}}"}
  - patchType: JSONPatch
    jsonPatch: {expression: "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {'a': 'b'}}]"}
  failurePolicy: Ignore
  matchConditions:
  - {name: not-system, expression: "request.namespace != 'kube-system'"}
  reinvocationPolicy: IfNeeded
`

const fullMAPB = `apiVersion: admissionregistration.k8s.io/VERSION
kind: MutatingAdmissionPolicyBinding
metadata: {name: full}
spec:
  policyName: full
  paramRef: {namespace: prod, selector: {matchLabels: {team: a}}, parameterNotFoundAction: Allow}
  matchResources:
    namespaceSelector: {matchLabels: {env: prod}}
    objectSelector: {}
    matchPolicy: Equivalent
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: ["*"], resources: ["*"]}
    excludeResourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CONNECT], resources: [pods/exec], resourceNames: [x], scope: Cluster}
`

// Each version decodes to the v1 object the same document gives as v1,
// and is stored as it was sent.
func TestMutatingVersionsConvertToV1(t *testing.T) {
	for _, doc := range []string{fullMAP, fullMAPB} {
		var want any
		if strings.Contains(doc, "Binding") {
			want = &admissionv1.MutatingAdmissionPolicyBinding{}
		} else {
			want = &admissionv1.MutatingAdmissionPolicy{}
		}
		v1doc := strings.Replace(doc, "VERSION", "v1", 1)
		if err := json.Unmarshal(yamlToJSON(t, v1doc), want); err != nil {
			t.Fatal(err)
		}
		for _, version := range []string{"v1", "v1beta1", "v1alpha1"} {
			t.Run(version+" "+reflect.TypeOf(want).Elem().Name(), func(t *testing.T) {
				d, _, err := decode([]byte(strings.Replace(doc, "VERSION", version, 1)))
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(d.typed, want) {
					got, _ := json.Marshal(d.typed)
					exp, _ := json.Marshal(want)
					t.Fatalf("converted:\n%s\nwant:\n%s", got, exp)
				}
				if got := d.obj.GetAPIVersion(); got != "admissionregistration.k8s.io/"+version {
					t.Fatalf("stored apiVersion %q", got)
				}
				if errs := checkExpressions(d); len(errs) != 0 {
					t.Fatalf("expressions: %v", errs)
				}
			})
		}
	}
}

func yamlToJSON(t *testing.T, doc string) []byte {
	t.Helper()
	d, _, err := decode([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	js, err := d.obj.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// v1alpha1 defaults a paramRef's parameterNotFoundAction to Deny, as the
// apiserver does when it reads that version; v1beta1 and v1 require it.
func TestMutatingBindingParamRefDefault(t *testing.T) {
	const doc = "apiVersion: admissionregistration.k8s.io/%s\nkind: MutatingAdmissionPolicyBinding\nmetadata: {name: b}\nspec: {policyName: p, paramRef: {name: x}}\n"
	d, _, err := decode([]byte(strings.Replace(doc, "%s", "v1alpha1", 1)))
	if err != nil {
		t.Fatal(err)
	}
	b := d.typed.(*admissionv1.MutatingAdmissionPolicyBinding)
	if a := b.Spec.ParamRef.ParameterNotFoundAction; a == nil || *a != admissionv1.DenyAction {
		t.Fatalf("parameterNotFoundAction = %v, want Deny", a)
	}
	if _, ok := nested(d.obj.Object, "spec", "paramRef", "parameterNotFoundAction"); ok {
		t.Fatal("the default was written into the stored object")
	}
	for _, v := range []string{"v1beta1", "v1"} {
		_, _, err := decode([]byte(strings.Replace(doc, "%s", v, 1)))
		if err == nil || !strings.Contains(err.Error(), "spec.paramRef.parameterNotFoundAction: Required value") {
			t.Fatalf("%s: err = %v, want parameterNotFoundAction required", v, err)
		}
	}
}

func nested(obj map[string]any, fields ...string) (any, bool) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[f]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// The tenant's snapshot mutates with what was applied, in every version.
func TestSnapshotMutatesWithStoredMutatingPolicies(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := New(pool)
	policies, err := os.ReadFile("../../samples/mutating/policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bindings, err := os.ReadFile("../../samples/mutating/bindings.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, version := range []string{"v1", "v1beta1", "v1alpha1"} {
		t.Run(version, func(t *testing.T) {
			tenant := pgtest.InsertTenant(t, pool)
			var docs [][]byte
			for _, f := range [][]byte{policies, bindings} {
				f = []byte(strings.ReplaceAll(string(f), "admissionregistration.k8s.io/v1\n", "admissionregistration.k8s.io/"+version+"\n"))
				for _, d := range strings.Split(string(f), "\n---\n") {
					docs = append(docs, []byte(d))
				}
			}
			if _, _, err := s.ApplyAll(ctx, tenant, "alice", docs, false); err != nil {
				t.Fatal(err)
			}
			o, err := s.Get(ctx, tenant, Ref{Group: GroupAdmission, Kind: KindMutatingPolicy.Kind, Name: "team-label"})
			if err != nil || o.APIVersion != "admissionregistration.k8s.io/"+version {
				t.Fatalf("stored %v, %v", o, err)
			}
			snap, err := s.CandidateSnapshot(ctx, tenant, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			if errs := snap.Compiled.CompileErrors(); len(errs) != 0 {
				t.Fatalf("compile errors: %v", errs)
			}
			res := snap.Compiled.Evaluate(ctx, evaluator.Mutating, pod(), evaluator.WithNamespaces(evaluator.NamespaceMap{}))
			if !res.Allowed || len(res.Patch) == 0 {
				t.Fatalf("allowed %v, patch %s, status %v", res.Allowed, res.Patch, res.Status)
			}
			labels, _ := nested(res.Object, "metadata", "labels", "example.com/team")
			if labels != "shop" {
				t.Fatalf("team label = %v in %v", labels, res.Object)
			}
		})
	}
}

func pod() *evaluator.Request {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	return &evaluator.Request{UID: "1", Kind: gvk, RequestKind: gvk, Resource: gvr, RequestResource: gvr,
		Name: "web", Namespace: "shop", Operation: admissionv1.Create,
		Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "web", "namespace": "shop"},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx"}}}}}
}

// Every version in the kind table has a typed form to decode into.
func TestPolicyKindsHaveTypes(t *testing.T) {
	for _, k := range PolicyKinds {
		for _, v := range k.Versions {
			if newTyped(k.WithVersion(v)) == nil {
				t.Errorf("%s %s: no typed form", k.Kind, v)
			}
		}
	}
}
