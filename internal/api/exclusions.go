package api

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/portcullis-dev/portcullis/internal/policystore"
	"github.com/portcullis-dev/portcullis/internal/tenancy/artifacts"
)

// need is one default webhook exclusion that a policy's rules match.
type need struct{ policy, exclusion string }

// tenantNeeds returns, for every live policy of the tenant, the default
// exclusions of the generated webhooks that its rules match.
func (s *Server) tenantNeeds(c *call) ([]need, error) {
	var out []need
	for _, kind := range []string{policystore.KindValidatingPolicy.Kind, policystore.KindMutatingPolicy.Kind} {
		objs, err := s.Policies.List(c.ctx(), c.tenant.ID, policystore.ListOptions{Group: policystore.GroupAdmission, Kind: kind})
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			for _, e := range policyNeeds(o.Object) {
				out = append(out, need{o.Name, e})
			}
		}
	}
	return out, nil
}

// policyNeeds returns the default exclusions a policy object's
// matchConstraints match. A policy that does not decode needs nothing:
// apply refused it already.
func policyNeeds(obj *unstructured.Unstructured) []string {
	raw, _, _ := unstructured.NestedSlice(obj.Object, "spec", "matchConstraints", "resourceRules")
	rules := make([]admissionregistrationv1.NamedRuleWithOperations, 0, len(raw))
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		var rule admissionregistrationv1.NamedRuleWithOperations
		if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &rule) == nil {
			rules = append(rules, rule)
		}
	}
	return artifacts.Needs(rules)
}

// exclusionWarning says that a policy matches requests the generated
// webhooks leave out, and what to do.
func exclusionWarning(policy, exclusion string) string {
	if exclusion == artifacts.ExclusionStatus {
		return fmt.Sprintf("policy %q matches %s, which webhook configurations generated while no policy of the tenant needed them leave out: "+
			"rewrite each cluster's with `admin cluster artifacts NAME --tenant T --out DIR` and apply its webhooks.yaml", policy, artifacts.ExclusionWhat(exclusion))
	}
	return fmt.Sprintf("policy %q matches %s, which the generated webhook configurations never send to the gateway: the policy will not see them",
		policy, artifacts.ExclusionWhat(exclusion))
}

// applyWarnings are the exclusion warnings of an applied object: a policy
// that matches requests the generated webhooks leave out.
func applyWarnings(o *policystore.Object) []string {
	if o.Group != policystore.GroupAdmission ||
		(o.Kind != policystore.KindValidatingPolicy.Kind && o.Kind != policystore.KindMutatingPolicy.Kind) || o.Object == nil {
		return nil
	}
	var out []string
	for _, e := range policyNeeds(o.Object) {
		out = append(out, exclusionWarning(o.Name, e))
	}
	return out
}
