package evaluator

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"google.golang.org/protobuf/types/known/structpb"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	celmutation "k8s.io/apiserver/pkg/cel/mutation"
	"k8s.io/apiserver/pkg/cel/mutation/dynamic"

	"github.com/portcullis-dev/portcullis/internal/evaluator/objpatch"
)

// The fast mutation path. For a built-in kind the plugin holds the object
// as its typed Go struct and applies every mutation with the apiserver's
// patchers, which encode, patch, merge and decode the whole object each
// time; doing the same here cannot be much faster than the plugin. The
// fast path holds the object in its canonical JSON form instead (the form
// ToUnstructured gives the typed struct, objpatch.Canonicalize), which is
// also what the plugin's expressions see of it, and applies each mutation
// to that JSON: an apply configuration with objpatch.ServerSideApply, a
// JSON patch with objpatch.ApplyJSONPatch, the result brought back to the
// canonical form by objpatch.Canonicalize. Only the typed CEL view (after
// a matchCondition) needs the typed struct, decoded from the JSON when a
// version of the object is first read that way.
//
// Whatever the fast path is not sure to do as the plugin does makes it
// decline, and mutate evaluates the request again on the exact path from
// the start, so that exactness never depends on what the fast path
// covers.

// fastMutations and fastMutationDeclines count the requests the fast path
// answered and those it gave up for the exact path.
var fastMutations, fastMutationDeclines atomic.Int64

// FastMutationCounts returns how many mutating evaluations the fast path answered
// and how many it declined (evaluated again exactly), for tests and
// benchmarks to see the path they exercise.
func FastMutationCounts() (fast, declined int64) {
	return fastMutations.Load(), fastMutationDeclines.Load()
}

// errFastDecline is returned by a fast mutation the fast path does not
// handle.
var errFastDecline = errors.New("the fast mutation path declines")

// fastEligible reports whether the fast path may try the request: a
// built-in kind, received in the version it was requested in (the
// plugin's conversion to the request's version is left to the exact
// path). A kind without a type converter fails in dispatchOne before
// either path patches anything.
func fastEligible(r *Request) bool {
	return kindInfoOf(r.Kind).typed && r.RequestKind == r.Kind
}

// loadFast makes the request's objects canonical; false when Canonicalize
// declines them.
func (st *mutationState) loadFast(r *Request) bool {
	st.typed, st.fast = true, true
	if r.Object != nil {
		obj, ok := objpatch.Canonicalize(r.Object, nil, r.Kind)
		if !ok {
			return false
		}
		st.obj = &unstructured.Unstructured{Object: obj}
	}
	if r.OldObject != nil {
		old, ok := objpatch.Canonicalize(r.OldObject, nil, r.Kind)
		if !ok {
			return false
		}
		st.old = &unstructured.Unstructured{Object: old}
	}
	return true
}

// celValue is the CEL value of a versioned object as the plugin's
// LazyObject gives it for the typed object the fast path stands for: the
// JSON form, or after a matchCondition the typed view of the struct,
// which a *lazyTyped decodes when an expression first reads it.
func (m *mutator) celValue(l *admission.LazyObject) (any, error) {
	obj := l.Object()
	//lint:ignore SA1019 the plugin's condition evaluator sets it, and mutations see the effect
	if !m.st.fast || obj == nil || !l.UseSchemalessTypeRef {
		v, err := l.CELValue()
		if v == nil {
			return nil, err // no typed nil in the interface
		}
		return v, err
	}
	u := obj.(*unstructured.Unstructured)
	if m.st.typed1 != nil && m.st.typed1.u == u {
		return m.st.typed1, nil
	}
	if m.st.typed2 != nil && m.st.typed2.u == u {
		return m.st.typed2, nil
	}
	lt := &lazyTyped{st: m.st, u: u, kind: m.req}
	m.st.typed1, m.st.typed2 = lt, m.st.typed1
	return lt, nil
}

// lazyTyped is the typed CEL view of a canonical object, decoded on first
// read, whole (value) or pruned to what a policy reads (typedValue).
type lazyTyped struct {
	st     *mutationState
	u      *unstructured.Unstructured
	kind   *Request
	val    ref.Val
	pruned []prunedView
}

func (l *lazyTyped) value() ref.Val {
	if l.val == nil {
		l.val = l.decode(l.u.Object)
	}
	return l.val
}

// dispatchFast is dispatchOne on the fast path: the plugin patcher's
// steps up to the patch (with their errors), then the fast patch.
func (m *mutator) dispatchFast(inv *invocation, cm *compiledMutation, va *admission.VersionedAttributes, tc managedfields.TypeConverter) error {
	ev := &mutationEvaluator{m: m, inv: inv, ce: cm.expr}
	if errs := ev.CompilationErrors(); len(errs) > 0 {
		return errors.Join(errs...)
	}
	eval, _, err := ev.ForInput(m.ctx, va, nil, plugincel.OptionalVariableBindings{}, nil, celconfig.RuntimeCELCostBudget)
	if err != nil {
		return err
	}
	if eval.Error != nil {
		return eval.Error
	}
	live := va.VersionedObject.Object().(*unstructured.Unstructured)
	var next map[string]any
	var ok bool
	if cm.patchType == admissionregistrationv1.PatchTypeJSONPatch {
		ops, err := jsonPatchOps(eval.EvalResult)
		if err != nil {
			return err
		}
		if next, ok = objpatch.ApplyJSONPatch(live.Object, ops); ok {
			// The decoder reads the kind from the document.
			ok = next["apiVersion"] == live.Object["apiVersion"] && next["kind"] == live.Object["kind"]
		}
	} else {
		objVal, isObj := eval.EvalResult.(*dynamic.ObjectVal)
		if !isObj {
			return errFastDecline
		}
		if err := objVal.CheckTypeNamesMatchFieldPathNames(); err != nil {
			return fmt.Errorf("type mismatch: %w", err)
		}
		patch, isMap := objVal.Value().(map[string]any)
		if !isMap {
			return errFastDecline
		}
		next, ok = objpatch.ServerSideApply(tc, live.Object, patch, va.VersionedKind, m.st.checked == live)
	}
	if !ok {
		return errFastDecline
	}
	if next, ok = objpatch.Canonicalize(next, live.Object, va.VersionedKind); !ok {
		return errFastDecline
	}
	u := &unstructured.Unstructured{Object: next}
	if cm.patchType != admissionregistrationv1.PatchTypeJSONPatch {
		// Merged from a checked object and a validated apply
		// configuration: the next ServerSideApply need not check it.
		m.st.checked = u
	}
	va.UpdateObject(u)
	return nil
}

// jsonPatchOps is the JSON patcher's evaluatePatchExpression after the
// evaluation, with its errors: the operations, values in their JSON form.
func jsonPatchOps(v ref.Val) ([]objpatch.Op, error) {
	iter, ok := v.(traits.Lister)
	if !ok {
		return nil, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array")
	}
	var ops []objpatch.Op
	for it := iter.Iterator(); it.HasNext() == types.True; {
		el := it.Next()
		patchObj, err := el.ConvertToNative(reflect.TypeOf(&celmutation.JSONPatchVal{}))
		if err != nil {
			return nil, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch: %w", err)
		}
		op, ok := patchObj.(*celmutation.JSONPatchVal)
		if !ok {
			return nil, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch, got element of %T", patchObj)
		}
		fo := objpatch.Op{Op: op.Op, Path: op.Path}
		if len(op.From) > 0 {
			fo.Op = "" // move and copy decline, whatever op says
		}
		if op.Val != nil {
			if objVal, ok := op.Val.(*dynamic.ObjectVal); ok {
				if err := objVal.CheckTypeNamesMatchFieldPathNames(); err != nil {
					return nil, fmt.Errorf("type mismatch: %w", err)
				}
			}
			pv, err := op.Val.ConvertToNative(reflect.TypeOf(&structpb.Value{}))
			if err != nil {
				return nil, fmt.Errorf("JSONPath valueExpression evaluated to a type that could not marshal to JSON: %w", err)
			}
			b, err := json.Marshal(pv)
			if err != nil {
				return nil, fmt.Errorf("JSONPath valueExpression evaluated to a type that could not marshal to JSON: %w", err)
			}
			if fo.Value, ok = objpatch.DecodeJSON(b); !ok {
				fo.Op = ""
			}
			fo.HasValue = true
		}
		ops = append(ops, fo)
	}
	return ops, nil
}
