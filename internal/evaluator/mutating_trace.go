package evaluator

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
)

// traceMutation records the outcome of mutation i of the invocation whose
// trace is bt: before is the object it was applied to, err what applying
// it returned.
func (m *mutator) traceMutation(bt *bindingTracer, i int, cm *compiledMutation, before runtime.Object, err error) {
	cost := m.mutationCost
	m.mutationCost = 0
	if bt == nil {
		return
	}
	mt := MutationTrace{Index: i, PatchType: string(cm.patchType), Cost: cost}
	if cm.expr != nil {
		mt.Expression = cm.expr.text
	}
	if err != nil {
		mt.Error = err.Error()
	} else if after := m.va.VersionedObject.Object(); after != before && !apiequality.Semantic.DeepEqual(before, after) {
		mt.Changed = true
	}
	bt.Mutations = append(bt.Mutations, mt)
}

// markReinvoked marks the traces of a mutating evaluation's second pass.
func markReinvoked(pts []PolicyTrace) {
	for i := range pts {
		pts[i].Reinvoked = true
		for j := range pts[i].Bindings {
			pts[i].Bindings[j].Reinvoked = true
		}
	}
}
