package evaluator

import (
	"bytes"
	"context"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// TestMutateFastConcurrent runs the fast mutation path from several
// goroutines on one snapshot, first use of its shared caches (shapes, the
// custom-value memo, the schema memo) included, and checks that each
// answer is the one a single call gives; run it with -race.
func TestMutateFastConcurrent(t *testing.T) {
	p, b := newMAP("p", admissionregistrationv1.NeverReinvocationPolicy,
		applyConfig(`Object{spec: Object.spec{containers: [Object.spec.containers{name: "app", resources: Object.spec.containers.resources{limits: {"cpu": "0.5"}}}]}}`),
		jsonPatch(`[JSONPatch{op: "add", path: "/metadata/labels/x", value: "1"}]`))
	p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "has(object.spec.containers)"}}
	s := Compile(Objects{MutatingPolicies: []*admissionregistrationv1.MutatingAdmissionPolicy{p},
		MutatingBindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b}}, CompileOptions{})
	fast0, _ := FastMutationCounts()
	var wg sync.WaitGroup
	patches := make([][]byte, 8)
	for i := range patches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			patches[i] = s.Evaluate(context.Background(), Mutating, mutatePodRequest()).Patch
		}()
	}
	wg.Wait()
	want := s.Evaluate(context.Background(), Mutating, mutatePodRequest()).Patch
	if want == nil {
		t.Fatal("no patch")
	}
	for i, got := range patches {
		if !bytes.Equal(got, want) {
			t.Errorf("goroutine %d: patch %s, want %s", i, got, want)
		}
	}
	if fast, _ := FastMutationCounts(); fast-fast0 != int64(len(patches)+1) {
		t.Errorf("the fast path answered %d of %d", fast-fast0, len(patches)+1)
	}
}
