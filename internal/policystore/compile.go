package policystore

import (
	"encoding/json"
	"regexp"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// checkExpressions compiles the expressions of a validating policy or
// binding with the evaluator's NewExpressions environment, as the apiserver
// does on create and update, and returns each error on its field. The
// evaluator does not evaluate MutatingAdmissionPolicies yet; for them only
// the authorizer is checked here, so that the write is refused with the same
// clear message.
func checkExpressions(d *decoded) field.ErrorList {
	var objs evaluator.Objects
	switch o := d.typed.(type) {
	case *admissionv1.ValidatingAdmissionPolicy:
		objs.Policies = append(objs.Policies, o)
	case *admissionv1.ValidatingAdmissionPolicyBinding:
		objs.Bindings = append(objs.Bindings, o)
	case *admissionv1.MutatingAdmissionPolicy:
		return checkMutatingAuthorizer(o)
	default:
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

var authorizerIdent = regexp.MustCompile(`(^|[^A-Za-z0-9_.])authorizer\b`)

const authorizerMessage = "compilation failed: authorizer and authorizer.requestResource are not supported: " +
	"Portcullis evaluates policies outside the cluster, where authorization checks cannot run"

func checkMutatingAuthorizer(p *admissionv1.MutatingAdmissionPolicy) field.ErrorList {
	var errs field.ErrorList
	check := func(path *field.Path, expr string) {
		if authorizerIdent.MatchString(expr) {
			errs = append(errs, field.Invalid(path, field.OmitValueType{}, authorizerMessage))
		}
	}
	sp := field.NewPath("spec")
	for i, v := range p.Spec.Variables {
		check(sp.Child("variables").Index(i).Child("expression"), v.Expression)
	}
	for i, m := range p.Spec.MatchConditions {
		check(sp.Child("matchConditions").Index(i).Child("expression"), m.Expression)
	}
	for i, m := range p.Spec.Mutations {
		if m.ApplyConfiguration != nil {
			check(sp.Child("mutations").Index(i).Child("applyConfiguration", "expression"), m.ApplyConfiguration.Expression)
		}
		if m.JSONPatch != nil {
			check(sp.Child("mutations").Index(i).Child("jsonPatch", "expression"), m.JSONPatch.Expression)
		}
	}
	return errs
}

func typesUID(s string) types.UID { return types.UID(s) }

// compileObjects builds the evaluator snapshot of a tenant from its live
// stored objects, with the StoredExpressions environment. Mutating policies
// and bindings are stored but not evaluated yet, so they are left out.
func compileObjects(objs []*unstructured.Unstructured) (*evaluator.Snapshot, error) {
	var in evaluator.Objects
	for _, u := range objs {
		gk := u.GroupVersionKind().GroupKind()
		switch gk {
		case KindValidatingPolicy:
			p := &admissionv1.ValidatingAdmissionPolicy{}
			if err := fromUnstructured(u, p); err != nil {
				return nil, err
			}
			in.Policies = append(in.Policies, p)
		case KindValidatingBinding:
			b := &admissionv1.ValidatingAdmissionPolicyBinding{}
			if err := fromUnstructured(u, b); err != nil {
				return nil, err
			}
			in.Bindings = append(in.Bindings, b)
		case KindMutatingPolicy, KindMutatingBinding:
		default:
			in.Params = append(in.Params, u)
		}
	}
	return evaluator.Compile(in, evaluator.CompileOptions{Mode: evaluator.StoredExpressions}), nil
}

func fromUnstructured(u *unstructured.Unstructured, into any) error {
	js, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	return json.Unmarshal(js, into)
}
