package policystore

import (
	"context"
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// checkExpressions compiles the expressions of a policy or binding with the
// evaluator's NewExpressions environment, as the apiserver does on create
// and update, and returns each error on its field. The evaluator refuses
// the authorizer there, so a policy that uses it is refused when written.
func checkExpressions(d *decoded) field.ErrorList {
	var objs evaluator.Objects
	if !addTyped(&objs, d.typed) {
		return nil
	}
	snap := evaluator.Compile(objs, evaluator.CompileOptions{Mode: evaluator.NewExpressions})
	var errs field.ErrorList
	for _, ce := range snap.CompileErrors() {
		errs = append(errs, &field.Error{Type: field.ErrorTypeInvalid, Field: fieldPath(ce.Field).String(),
			BadValue: field.OmitValueType{}, Detail: ce.Message})
	}
	return errs
}

// addTyped adds a v1 policy or binding to objs, and reports whether obj was
// one.
func addTyped(objs *evaluator.Objects, obj any) bool {
	switch o := obj.(type) {
	case *admissionv1.ValidatingAdmissionPolicy:
		objs.Policies = append(objs.Policies, o)
	case *admissionv1.ValidatingAdmissionPolicyBinding:
		objs.Bindings = append(objs.Bindings, o)
	case *admissionv1.MutatingAdmissionPolicy:
		objs.MutatingPolicies = append(objs.MutatingPolicies, o)
	case *admissionv1.MutatingAdmissionPolicyBinding:
		objs.MutatingBindings = append(objs.MutatingBindings, o)
	default:
		return false
	}
	return true
}

func typesUID(s string) types.UID { return types.UID(s) }

// compileObjects builds the evaluator snapshot of a tenant from its live
// stored objects, with the StoredExpressions environment. Policies and
// bindings are read in the version they were written in and converted to
// v1; every other object is a param.
func compileObjects(ctx context.Context, objs []*unstructured.Unstructured) (*evaluator.Snapshot, error) {
	var in evaluator.Objects
	for _, u := range objs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		gvk := u.GroupVersionKind()
		if !IsPolicyKind(gvk.GroupKind()) {
			in.Params = append(in.Params, u)
			continue
		}
		typed := newTyped(gvk)
		if typed == nil {
			return nil, fmt.Errorf("stored %s %q has version %s, which the store does not read", kindLabel(gvk.GroupKind()), u.GetName(), gvk.Version)
		}
		if err := fromUnstructured(u, typed); err != nil {
			return nil, err
		}
		v1, err := toV1(typed)
		if err != nil {
			return nil, err
		}
		addTyped(&in, v1)
	}
	return evaluator.CompileContext(ctx, in, evaluator.CompileOptions{Mode: evaluator.StoredExpressions})
}

func fromUnstructured(u *unstructured.Unstructured, into any) error {
	js, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	return json.Unmarshal(js, into)
}
