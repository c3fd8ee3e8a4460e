package api

import (
	"reflect"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// The second pass of a mutation shows only what ran again, marked
// reinvoked; its mutations and their cost go with it.
func TestWireTraceMutations(t *testing.T) {
	mt := evaluator.MutationTrace{Index: 1, PatchType: "JSONPatch", Expression: "[]", Changed: true, Cost: 4}
	res := &evaluator.Result{Trace: []evaluator.PolicyTrace{
		{Policy: "a", Matched: true, Bindings: []evaluator.BindingTrace{{Binding: "a", Matched: true, Outcome: evaluator.OutcomePass,
			Mutations: []evaluator.MutationTrace{mt}, Cost: 4}}},
		{Policy: "b", Reason: "matchConstraints do not match the request"},
		{Policy: "a", Matched: true, Reinvoked: true, Bindings: []evaluator.BindingTrace{{Binding: "a", Matched: true,
			Outcome: evaluator.OutcomePass, Reinvoked: true, Mutations: []evaluator.MutationTrace{mt}, Cost: 4}}},
		{Policy: "b", Reason: "matchConstraints do not match the request", Reinvoked: true},
		{Policy: "c", Matched: true, Reinvoked: true, Bindings: []evaluator.BindingTrace{{Binding: "c", Matched: true, Reinvoked: true}}},
	}}
	wm := []apiv1.MutationTrace{{Index: 1, PatchType: "JSONPatch", Expression: "[]", Changed: true, Cost: 4}}
	want := []apiv1.BindingTrace{
		{Policy: "a", Binding: "a", Matched: true, Outcome: "Pass", Mutations: wm, Cost: 4},
		{Policy: "b", Reason: "matchConstraints do not match the request", Outcome: "NotMatched"},
		{Policy: "a", Binding: "a", Matched: true, Outcome: "Pass", Mutations: wm, Cost: 4, Reinvoked: true},
	}
	if got := wireTrace(res); !reflect.DeepEqual(got, want) {
		t.Fatalf("wireTrace:\n%+v\nwant\n%+v", got, want)
	}
}
