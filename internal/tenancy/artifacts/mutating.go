package artifacts

import (
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MutatingWebhookName is the name of the mutating webhook inside its
// configuration.
const MutatingWebhookName = "mutate.portcullis.dev"

// MutatingWebhookConfiguration returns the admissionregistration.k8s.io/v1
// configuration that sends a tenant's admission requests to the gateway's
// mutating endpoint, with the same options and good practices as
// ValidatingWebhookConfiguration:
//   - url https://<gateway>/t/<tenant>/mutate, with CABundle;
//   - CREATE, UPDATE and CONNECT on every resource and subresource, whatever
//     the policies are when it is written, so that a policy applied later
//     takes effect without rewiring the cluster. DELETE is left out: the
//     MutatingAdmissionPolicy plugin never mutates it, so the call would
//     only cost time;
//   - reinvocationPolicy IfNeeded: when a later mutating webhook or plugin
//     changes the object, the apiserver calls the gateway once more, so the
//     policies see the final object as the in-process plugin's IfNeeded
//     policies would (docs/webhook.md says how a re-call differs);
//   - admissionReviewVersions [v1], sideEffects None, timeoutSeconds 5,
//     matchPolicy Equivalent, failurePolicy Fail, the namespaceSelector
//     and matchConditions of the validating webhook.
func MutatingWebhookConfiguration(o WebhookOptions) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	h, err := o.settings()
	if err != nil {
		return nil, err
	}
	all := admissionregistrationv1.AllScopes
	reinvoke := admissionregistrationv1.IfNeededReinvocationPolicy
	typeMeta, objectMeta := h.meta("MutatingWebhookConfiguration", o.Tenant)
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   typeMeta,
		ObjectMeta: objectMeta,
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: MutatingWebhookName,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				URL:      h.hookURL(o.Tenant, "mutate"),
				CABundle: append([]byte(nil), o.CABundle...),
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{
					admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Connect,
				},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}, Scope: &all,
				},
			}},
			FailurePolicy:           &h.failure,
			MatchPolicy:             &h.matchPolicy,
			NamespaceSelector:       h.nsSelector,
			ObjectSelector:          &metav1.LabelSelector{},
			SideEffects:             &h.sideEffects,
			TimeoutSeconds:          &h.timeout,
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      &reinvoke,
			MatchConditions:         slices.Clone(h.conditions),
		}},
	}, nil
}

// Webhooks renders both configurations as one YAML stream, the validating
// one first: the webhooks.yaml a cluster's admin applies.
func Webhooks(o WebhookOptions) ([]byte, error) {
	vwc, err := ValidatingWebhookConfiguration(o)
	if err != nil {
		return nil, err
	}
	mwc, err := MutatingWebhookConfiguration(o)
	if err != nil {
		return nil, err
	}
	v, err := YAML(vwc)
	if err != nil {
		return nil, err
	}
	m, err := YAML(mwc)
	if err != nil {
		return nil, err
	}
	out := append(v, "---\n"...)
	return append(out, m...), nil
}
