package evaluator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type mutation struct {
	patchType admissionregistrationv1.PatchType
	expr      string
}

func applyConfig(expr string) mutation {
	return mutation{admissionregistrationv1.PatchTypeApplyConfiguration, expr}
}

func jsonPatch(expr string) mutation {
	return mutation{admissionregistrationv1.PatchTypeJSONPatch, expr}
}

// newMAP is a policy over pods with the given mutations, and its
// binding.
func newMAP(name string, reinvoke admissionregistrationv1.ReinvocationPolicyType, ms ...mutation) (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	p := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"CREATE", "UPDATE"}, []string{""}, []string{"v1"}, []string{"pods"})},
			},
			ReinvocationPolicy: reinvoke,
		},
	}
	for _, m := range ms {
		mu := admissionregistrationv1.Mutation{PatchType: m.patchType}
		if m.patchType == admissionregistrationv1.PatchTypeJSONPatch {
			mu.JSONPatch = &admissionregistrationv1.JSONPatch{Expression: m.expr}
		} else {
			mu.ApplyConfiguration = &admissionregistrationv1.ApplyConfiguration{Expression: m.expr}
		}
		p.Spec.Mutations = append(p.Spec.Mutations, mu)
	}
	b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-binding"},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name},
	}
	return p, b
}

func mutatePodRequest() *Request {
	obj := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p", "namespace": "default", "labels": map[string]any{"app": "web"}},
		"spec": map[string]any{"containers": []any{
			map[string]any{"name": "app", "image": "nginx"},
		}},
	}
	return &Request{Kind: podGVK, Resource: podGVR, Namespace: "default", Name: "p", Operation: "CREATE", Object: obj}
}

func TestMutateSmoke(t *testing.T) {
	tests := []struct {
		name      string
		mutations []mutation
		reinvoke  admissionregistrationv1.ReinvocationPolicyType
		wantPatch string
		wantDeny  string
	}{
		{name: "apply configuration adds a label",
			mutations: []mutation{applyConfig(`Object{metadata: Object.metadata{labels: {"team": "a"}}}`)},
			wantPatch: `[{"op":"add","path":"/metadata/labels/team","value":"a"}]`},
		{name: "json patch with escaped key",
			mutations: []mutation{jsonPatch(`[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("a/b~c"), value: "x"}]`)},
			wantPatch: `[{"op":"add","path":"/metadata/labels/a~1b~0c","value":"x"}]`},
		{name: "no-op apply configuration",
			mutations: []mutation{applyConfig(`Object{metadata: Object.metadata{labels: {"app": "web"}}}`)}},
		{name: "IfNeeded non-idempotent mutation runs twice",
			reinvoke:  admissionregistrationv1.IfNeededReinvocationPolicy,
			mutations: []mutation{jsonPatch(`[JSONPatch{op: "add", path: "/spec/containers/-", value: Object.spec.containers{name: "c" + string(size(object.spec.containers)), image: "busybox"}}]`)},
			wantPatch: `[{"op":"add","path":"/spec/containers/1","value":{"image":"busybox","name":"c1","resources":{}}},{"op":"add","path":"/spec/containers/2","value":{"image":"busybox","name":"c2","resources":{}}}]`},
		{name: "unknown field refused",
			mutations: []mutation{jsonPatch(`[JSONPatch{op: "add", path: "/spec/bogus", value: "x"}]`)},
			wantDeny:  "unknown field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, b := newMAP("p", tc.reinvoke, tc.mutations...)
			s := Compile(Objects{MutatingPolicies: []*admissionregistrationv1.MutatingAdmissionPolicy{p},
				MutatingBindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b}}, CompileOptions{})
			if errs := s.CompileErrors(); len(errs) > 0 {
				t.Fatal(errs)
			}
			res := s.Evaluate(context.Background(), Mutating, mutatePodRequest())
			if tc.wantDeny != "" {
				if res.Allowed || !strings.Contains(res.Status.Message, tc.wantDeny) {
					t.Fatalf("want a denial with %q, got %+v %+v", tc.wantDeny, res.Status, res.Bindings)
				}
				return
			}
			if !res.Allowed {
				t.Fatalf("denied: %+v", res.Status)
			}
			if string(res.Patch) != tc.wantPatch {
				b, _ := json.Marshal(res.Object)
				t.Fatalf("patch %s, want %s; object %s", res.Patch, tc.wantPatch, b)
			}
		})
	}
}

// TestMutatingCompileErrors reports a MutatingAdmissionPolicy's compile
// errors with its kind and the field of the expression.
func TestMutatingCompileErrors(t *testing.T) {
	p, b := newMAP("bad", admissionregistrationv1.NeverReinvocationPolicy,
		applyConfig(`Object{spec: nope}`), jsonPatch(`[JSONPatch{op: "add", path: 1}]`), applyConfig(`authorizer.group("").resource("pods").check("get").allowed() ? Object{} : Object{}`))
	p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "v", Expression: "1 +"}}
	p.Spec.Mutations = append(p.Spec.Mutations, admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch})
	b.Spec.MatchResources = &admissionregistrationv1.MatchResources{ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}}}
	s := Compile(Objects{MutatingPolicies: []*admissionregistrationv1.MutatingAdmissionPolicy{p},
		MutatingBindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b}}, CompileOptions{Mode: NewExpressions})
	var got []string
	for _, e := range s.CompileErrors() {
		got = append(got, e.Kind+" "+e.Name+" "+e.Field)
	}
	want := []string{
		"MutatingAdmissionPolicy bad spec.variables[0].expression",
		"MutatingAdmissionPolicy bad spec.mutations[0].applyConfiguration.expression",
		"MutatingAdmissionPolicy bad spec.mutations[1].jsonPatch.expression",
		"MutatingAdmissionPolicy bad spec.mutations[2].applyConfiguration.expression",
		"MutatingAdmissionPolicy bad spec.mutations[3]",
		"MutatingAdmissionPolicyBinding bad-binding spec.matchResources",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("compile errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	st := s.Stats()
	if st.MutatingPolicies != 1 || st.MutatingHooks != 1 || st.MutatingBindings != 1 || st.CompileErrors != len(want) || st.Policies != 0 {
		t.Fatalf("stats %+v", st)
	}
	// The policy still loads: its errors follow its failurePolicy.
	res := s.Evaluate(context.Background(), Mutating, mutatePodRequest())
	if res.Allowed || res.Status == nil || res.Status.Code != 403 {
		t.Fatalf("want a 403 denial, got %+v", res)
	}
}

// TestMutateSkipsDelete: the plugin handles CREATE, UPDATE and CONNECT.
func TestMutateSkipsDelete(t *testing.T) {
	p, b := newMAP("p", "", applyConfig(`Object{metadata: Object.metadata{labels: {"x": "y"}}}`))
	p.Spec.MatchConstraints.ResourceRules[0].Operations = append(p.Spec.MatchConstraints.ResourceRules[0].Operations, "DELETE")
	s := Compile(Objects{MutatingPolicies: []*admissionregistrationv1.MutatingAdmissionPolicy{p},
		MutatingBindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b}}, CompileOptions{})
	r := mutatePodRequest()
	r.Operation, r.OldObject, r.Object = "DELETE", r.Object, nil
	if res := s.Evaluate(context.Background(), Mutating, r); !res.Allowed || res.Patch != nil || len(res.Bindings) != 0 {
		t.Fatalf("DELETE mutated: %+v", res)
	}
}

// TestMutateTrace traces both passes of a reinvoked policy.
func TestMutateTrace(t *testing.T) {
	p, b := newMAP("p", admissionregistrationv1.IfNeededReinvocationPolicy, applyConfig(`Object{metadata: Object.metadata{labels: {"x": "y"}}}`))
	p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "always", Expression: "true"}}
	s := Compile(Objects{MutatingPolicies: []*admissionregistrationv1.MutatingAdmissionPolicy{p},
		MutatingBindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b}}, CompileOptions{})
	res := s.Evaluate(context.Background(), Mutating, mutatePodRequest(), WithTrace())
	if !res.Allowed || res.Patch == nil || len(res.Trace) != 2 {
		t.Fatalf("want a patch and a trace of two passes, got %+v", res)
	}
	if len(res.Bindings) != 2 || !res.Bindings[0].Mutated || res.Bindings[0].Reinvoked || !res.Bindings[1].Reinvoked {
		t.Fatalf("bindings %+v", res.Bindings)
	}
}

// TestMutateConcurrent runs one snapshot from several goroutines (go test
// -race): the type converter and the object interfaces are shared.
func TestMutateConcurrent(t *testing.T) {
	p, b := newMAP("p", admissionregistrationv1.IfNeededReinvocationPolicy,
		applyConfig(`Object{metadata: Object.metadata{labels: {"x": string(size(object.metadata.labels))}}}`),
		jsonPatch(`[JSONPatch{op: "add", path: "/spec/containers/-", value: Object.spec.containers{name: "c" + string(size(object.spec.containers)), image: "y"}}]`))
	s := Compile(Objects{MutatingPolicies: []*admissionregistrationv1.MutatingAdmissionPolicy{p},
		MutatingBindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b}}, CompileOptions{})
	want := string(s.Evaluate(context.Background(), Mutating, mutatePodRequest()).Patch)
	done := make(chan string)
	for range 4 {
		go func() {
			var got string
			for range 20 {
				got = string(s.Evaluate(context.Background(), Mutating, mutatePodRequest()).Patch)
				if got != want {
					break
				}
			}
			done <- got
		}()
	}
	for range 4 {
		if got := <-done; got != want {
			t.Fatalf("patch %s, want %s", got, want)
		}
	}
}

// TestMutateTraceMutations: the trace shows each mutation's outcome, in
// both passes, and the binding's cost includes theirs.
func TestMutateTraceMutations(t *testing.T) {
	p, b := newMAP("p", admissionregistrationv1.IfNeededReinvocationPolicy,
		applyConfig(`Object{metadata: Object.metadata{labels: {"x": "y"}}}`),
		applyConfig(`Object{metadata: Object.metadata{labels: {"app": "web"}}}`),
		jsonPatch(`[JSONPatch{op: "remove", path: "/metadata/annotations/nope"}]`))
	ignore := admissionregistrationv1.Ignore
	p.Spec.FailurePolicy = &ignore
	s := Compile(Objects{MutatingPolicies: []*admissionregistrationv1.MutatingAdmissionPolicy{p},
		MutatingBindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b}}, CompileOptions{})
	res := s.Evaluate(context.Background(), Mutating, mutatePodRequest(), WithTrace())
	if !res.Allowed || res.Patch == nil || len(res.Trace) != 2 {
		t.Fatalf("want a patch and a trace of two passes, got %+v", res)
	}
	type got struct {
		index     int
		patchType string
		changed   bool
		failed    bool
	}
	want := []got{{0, "ApplyConfiguration", true, false}, {1, "ApplyConfiguration", false, false}, {2, "JSONPatch", false, true}}
	for pass, pt := range res.Trace {
		if pt.Reinvoked != (pass == 1) || len(pt.Bindings) != 1 || pt.Bindings[0].Reinvoked != (pass == 1) {
			t.Fatalf("pass %d: trace %+v", pass, pt)
		}
		bt := pt.Bindings[0]
		var sum int64
		var gotMs []got
		for _, mt := range bt.Mutations {
			gotMs = append(gotMs, got{mt.Index, mt.PatchType, mt.Changed, mt.Error != ""})
			if mt.Cost <= 0 || mt.Expression == "" {
				t.Errorf("pass %d: mutation %d without cost or expression: %+v", pass, mt.Index, mt)
			}
			sum += mt.Cost
		}
		w := want
		if pass == 1 { // the label is there already: nothing changes
			w = []got{{0, "ApplyConfiguration", false, false}, {1, "ApplyConfiguration", false, false}, {2, "JSONPatch", false, true}}
		}
		if fmt.Sprint(gotMs) != fmt.Sprint(w) {
			t.Errorf("pass %d: mutations %+v, want %+v", pass, gotMs, w)
		}
		if bt.Cost != sum {
			t.Errorf("pass %d: binding cost %d, mutations %d", pass, bt.Cost, sum)
		}
		if !strings.Contains(bt.Mutations[2].Error, "JSON Patch") {
			t.Errorf("pass %d: the failed mutation's error: %q", pass, bt.Mutations[2].Error)
		}
	}
}
