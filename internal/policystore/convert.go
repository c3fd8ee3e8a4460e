package policystore

import (
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	admissionv1alpha1 "k8s.io/api/admissionregistration/v1alpha1"
	admissionv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The versions of the mutating kinds. The store keeps an object in the
// version it was written in (history, diff and get show what the user
// sent) and converts it to v1 whenever it is checked or compiled, as the
// apiserver converts what it reads to its internal version.
//
// In k8s.io/api v0.37 the three versions of MutatingAdmissionPolicy and
// MutatingAdmissionPolicyBinding have the same fields, with the same JSON
// names and types (TestMutatingVersionsHaveV1Fields holds them to it), so
// the apiserver's generated conversion copies each field as it is; a JSON
// round trip through the v1 type does the same. What differs is
// defaulting, which the apiserver applies in the version sent, before
// converting: v1alpha1 defaults a paramRef's parameterNotFoundAction to
// Deny, where v1beta1 and v1 require it.

// newTyped returns an empty typed object of a policy kind in the given
// version, or nil when the store does not accept that version.
func newTyped(gvk schema.GroupVersionKind) any {
	switch gvk.GroupKind() {
	case KindValidatingPolicy:
		if gvk.Version == "v1" {
			return &admissionv1.ValidatingAdmissionPolicy{}
		}
	case KindValidatingBinding:
		if gvk.Version == "v1" {
			return &admissionv1.ValidatingAdmissionPolicyBinding{}
		}
	case KindMutatingPolicy:
		switch gvk.Version {
		case "v1":
			return &admissionv1.MutatingAdmissionPolicy{}
		case "v1beta1":
			return &admissionv1beta1.MutatingAdmissionPolicy{}
		case "v1alpha1":
			return &admissionv1alpha1.MutatingAdmissionPolicy{}
		}
	case KindMutatingBinding:
		switch gvk.Version {
		case "v1":
			return &admissionv1.MutatingAdmissionPolicyBinding{}
		case "v1beta1":
			return &admissionv1beta1.MutatingAdmissionPolicyBinding{}
		case "v1alpha1":
			return &admissionv1alpha1.MutatingAdmissionPolicyBinding{}
		}
	}
	return nil
}

// toV1 applies the defaults of the object's own version and converts it to
// v1. A v1 object is returned as it is.
func toV1(obj any) (any, error) {
	switch o := obj.(type) {
	case *admissionv1beta1.MutatingAdmissionPolicy:
		return convertJSON(o, &admissionv1.MutatingAdmissionPolicy{})
	case *admissionv1alpha1.MutatingAdmissionPolicy:
		return convertJSON(o, &admissionv1.MutatingAdmissionPolicy{})
	case *admissionv1beta1.MutatingAdmissionPolicyBinding:
		return convertJSON(o, &admissionv1.MutatingAdmissionPolicyBinding{})
	case *admissionv1alpha1.MutatingAdmissionPolicyBinding:
		o = o.DeepCopy()
		if r := o.Spec.ParamRef; r != nil && r.ParameterNotFoundAction == nil {
			deny := admissionv1alpha1.DenyAction
			r.ParameterNotFoundAction = &deny
		}
		return convertJSON(o, &admissionv1.MutatingAdmissionPolicyBinding{})
	}
	return obj, nil
}

func convertJSON[T any, PT interface {
	*T
	GetObjectKind() schema.ObjectKind
}](from any, to PT) (PT, error) {
	b, err := json.Marshal(from)
	if err == nil {
		err = json.Unmarshal(b, to)
	}
	if err != nil {
		return nil, fmt.Errorf("converting %T to v1: %w", from, err)
	}
	gvk := to.GetObjectKind().GroupVersionKind()
	gvk.Version = "v1"
	to.GetObjectKind().SetGroupVersionKind(gvk)
	return to, nil
}
