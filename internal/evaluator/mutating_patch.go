package evaluator

import (
	"context"
	"errors"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/portcullis-dev/portcullis/internal/evaluator/objpatch"
)

// The mutations are applied by the apiserver's own patchers
// (patch.NewJSONPatcher, patch.NewApplyConfigurationPatcher), so that the
// JSON patch quirks, the server-side-apply merge and the refusals are the
// plugin's. Only the expression is evaluated here, by the evaluator's
// frames, behind the patchers' MutatingEvaluator interface.
//
// The plugin holds a built-in kind as its typed Go object, and so does
// this: the request's object is decoded into the client-go scheme's type,
// and what the patchers return is converted back to it, which refuses
// unknown fields and wrong types as the plugin does. Other kinds are
// unstructured.

var objectInterfaces = admission.NewObjectInterfacesFromScheme(clientgoscheme.Scheme)

// load makes the request's objects what the plugin holds: typed for a kind
// of the client-go scheme, unstructured otherwise.
func (st *mutationState) load(r *Request) *apierrors.StatusError {
	st.typed = clientgoscheme.Scheme.Recognizes(r.Kind)
	var err error
	if st.obj, err = st.object(r.Object, r.Kind); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the object is not a valid %s: %v", r.Kind.Kind, err))
	}
	if r.OldObject != nil {
		if st.old, err = st.object(r.OldObject, r.Kind); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("the old object is not a valid %s: %v", r.Kind.Kind, err))
		}
	}
	return nil
}

func (st *mutationState) object(m map[string]any, gvk schema.GroupVersionKind) (runtime.Object, error) {
	if m == nil {
		return nil, nil
	}
	if !st.typed {
		u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(m)}
		return u, nil
	}
	obj, err := clientgoscheme.Scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, obj); err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

// unstructured is an object in its JSON form.
func (st *mutationState) unstructured(obj runtime.Object) map[string]any {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil
	}
	return m
}

// patch is the final object and the JSON patch from the request's object
// to it. The change is what the mutations did to the object as the plugin
// holds it, carried over to the request's JSON, so that fields the typed
// form spells differently (an absent field it writes as null, an empty
// map) are left as they were sent.
func (st *mutationState) patch(sent map[string]any, first runtime.Object) (map[string]any, []byte) {
	before, after := st.unstructured(first), st.unstructured(st.obj)
	if !st.typed {
		before = sent
	}
	final := objpatch.CarryOver(sent, before, after)
	patch := objpatch.Diff(sent, final)
	if patch == nil {
		return nil, nil
	}
	return final.(map[string]any), patch
}

// dispatchOne mirrors the plugin dispatcher's dispatchOne.
func (m *mutator) dispatchOne(inv *invocation, cm *compiledMutation, va *admission.VersionedAttributes, gvr schema.GroupVersionResource) error {
	if cm.expr == nil { // prepare has refused the policy
		return apierrors.NewInternalError(fmt.Errorf("no patcher for policy %v", inv.policy.name))
	}
	tc := m.typeConverter(va.VersionedKind)
	if tc == nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("Resource kind %s not found. There can be a delay between when CustomResourceDefinitions are created and when they are available.", va.VersionedKind))
	}
	if m.st.fast {
		return m.dispatchFast(inv, cm, va, tc)
	}
	ev := &mutationEvaluator{m: m, inv: inv, ce: cm.expr}
	var p patch.Patcher
	if cm.patchType == admissionregistrationv1.PatchTypeJSONPatch {
		p = patch.NewJSONPatcher(ev)
	} else {
		p = patch.NewApplyConfigurationPatcher(ev)
	}
	req := patch.Request{
		MatchedResource:     gvr,
		VersionedAttributes: va,
		ObjectInterfaces:    objectInterfaces,
		Namespace:           inv.namespace,
		TypeConverter:       tc,
	}
	obj, err := p.Patch(m.ctx, req, celconfig.RuntimeCELCostBudget)
	if err != nil {
		return err
	}
	if _, ok := va.VersionedObject.Object().(*unstructured.Unstructured); !ok {
		if obj, err = objectInterfaces.GetObjectConvertor().ConvertToVersion(obj, va.GetKind().GroupVersion()); err != nil {
			return err
		}
	}
	// The client-go scheme has no defaulters: see the package documentation.
	objectInterfaces.GetObjectDefaulter().Default(obj)
	va.UpdateObject(obj)
	return nil
}

// mutationEvaluator evaluates a mutation's expression for the apiserver's
// patcher, in a frame of the request, with the object the patcher holds.
type mutationEvaluator struct {
	m   *mutator
	inv *invocation
	ce  *compiledExpr
}

var _ plugincel.MutatingEvaluator = (*mutationEvaluator)(nil)

func (e *mutationEvaluator) ForInput(_ context.Context, va *admission.VersionedAttributes, _ *admissionv1.AdmissionRequest, _ plugincel.OptionalVariableBindings, _ *corev1.Namespace, budget int64) (plugincel.EvaluationResult, int64, error) {
	m, inv := e.m, e.inv
	if err := m.setObjects(va); err != nil {
		return plugincel.EvaluationResult{}, -1, err
	}
	request := m.requestValue(m.matched(inv))
	_, ns := m.namespaceValues(inv.namespace)
	fr := m.newFrame(inv.policy, inv.param, request, ns, nil)
	given := m.budget(budget)
	r, remaining, err := fr.evaluate(e.ce, given)
	// The patcher's budget, not the limit's cut of it, goes on: what it
	// gets back is its budget less what the expression cost.
	m.charge(budget, given, remaining)
	if remaining >= 0 {
		remaining = budget - (given - remaining)
	}
	if err != nil {
		return plugincel.EvaluationResult{}, -1, err
	}
	m.mutationCost = budget - remaining
	res := plugincel.EvaluationResult{EvalResult: r.val, ExpressionAccessor: e.ce.result.ExpressionAccessor}
	if r.err != nil {
		res.Error = r.err
	}
	return res, remaining, nil
}

func (e *mutationEvaluator) CompilationErrors() []error {
	if e.ce.result.Error != nil {
		return []error{e.ce.result.Error}
	}
	return nil
}

func asStatusError(err error) (*apierrors.StatusError, bool) {
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		return se, true
	}
	return nil, false
}

// mutationCause classifies a mutation's error as the plugin's metrics do
// (mutating.ErrorType).
func mutationCause(err error) Cause {
	if strings.HasPrefix(err.Error(), "compilation") {
		return CauseCompileError
	}
	return CauseError
}
