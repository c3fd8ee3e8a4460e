package evaluator

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SetPolicyDefaults applies the API server's defaults for
// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy, as a write
// through the API would.
func SetPolicyDefaults(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
	if p.Spec.FailurePolicy == nil {
		f := admissionregistrationv1.Fail
		p.Spec.FailurePolicy = &f
	}
	if p.Spec.MatchConstraints != nil {
		setMatchResourcesDefaults(p.Spec.MatchConstraints)
	}
}

// SetBindingDefaults applies the API server's defaults for
// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding.
func SetBindingDefaults(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	if b.Spec.MatchResources != nil {
		setMatchResourcesDefaults(b.Spec.MatchResources)
	}
}

func setMatchResourcesDefaults(m *admissionregistrationv1.MatchResources) {
	if m.MatchPolicy == nil {
		mp := admissionregistrationv1.Equivalent
		m.MatchPolicy = &mp
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for i := range m.ResourceRules {
		if m.ResourceRules[i].Scope == nil {
			s := admissionregistrationv1.AllScopes
			m.ResourceRules[i].Scope = &s
		}
	}
	for i := range m.ExcludeResourceRules {
		if m.ExcludeResourceRules[i].Scope == nil {
			s := admissionregistrationv1.AllScopes
			m.ExcludeResourceRules[i].Scope = &s
		}
	}
}
