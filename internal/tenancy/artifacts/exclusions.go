package artifacts

import (
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// IgnoreLabel opts a namespace out: the generated webhooks send nothing
// from a namespace labelled portcullis.dev/ignore=true (nor the Namespace's
// own writes while it carries the label), as Gatekeeper's
// admission.gatekeeper.sh/ignore does. Anyone who may label namespaces may
// opt one out: restrict who can update namespaces (docs/webhook.md).
const IgnoreLabel = "portcullis.dev/ignore"

// Exclusion is one kind of request that the generated webhook
// configurations leave out by default, as the webhook good practices,
// Kyverno and Gatekeeper do: requests that are frequent, that the cluster
// needs to run (an unreachable gateway must not stop them under
// failurePolicy Fail), and that policies rarely care about.
type Exclusion struct {
	// Name names the matchCondition, "exclude-<name>".
	Name string
	// What says, for people, what is left out.
	What string
	// Expression is the matchCondition: true sends the request. An
	// expression that errors fails the call by the webhook's failurePolicy,
	// so a field the request may lack (subResource is omitted when empty)
	// is tested with has() first.
	Expression string
	// resources are what the exclusion covers, as group, resource and
	// subresource; resource "*" is any resource.
	resources []groupResource
}

type groupResource struct{ group, resource, sub string }

// ExclusionStatus is the name of the exclusion of status writes: the only
// default a tenant's policies can lift (WebhookOptions.IncludeStatus).
const ExclusionStatus = "status"

// Exclusions are the default exclusions, in the order of their
// matchConditions.
var Exclusions = []Exclusion{
	{Name: "leases", What: "leases (coordination.k8s.io)",
		Expression: `!(request.resource.group == "coordination.k8s.io" && request.resource.resource == "leases")`,
		resources:  []groupResource{{"coordination.k8s.io", "leases", ""}}},
	{Name: "events", What: "events (core and events.k8s.io)",
		Expression: `!(request.resource.resource == "events" && request.resource.group in ["", "events.k8s.io"])`,
		resources:  []groupResource{{"", "events", ""}, {"events.k8s.io", "events", ""}}},
	{Name: "reviews", What: "authentication.k8s.io and authorization.k8s.io reviews (TokenReview, SubjectAccessReview and the like)",
		Expression: `!(request.resource.group in ["authentication.k8s.io", "authorization.k8s.io"])`,
		resources: []groupResource{
			{"authentication.k8s.io", "tokenreviews", ""}, {"authentication.k8s.io", "selfsubjectreviews", ""},
			{"authorization.k8s.io", "subjectaccessreviews", ""}, {"authorization.k8s.io", "selfsubjectaccessreviews", ""},
			{"authorization.k8s.io", "localsubjectaccessreviews", ""}, {"authorization.k8s.io", "selfsubjectrulesreviews", ""},
		}},
	{Name: "pod-binding", What: "pods/binding (the scheduler binding pods to nodes)",
		Expression: `!(request.resource.group == "" && request.resource.resource == "pods" && has(request.subResource) && request.subResource == "binding")`,
		resources:  []groupResource{{"", "pods", "binding"}}},
	{Name: ExclusionStatus, What: "*/status writes",
		Expression: `!has(request.subResource) || request.subResource != "status"`,
		resources:  []groupResource{{"*", "*", "status"}}},
}

// kubeletCondition leaves out requests made by nodes (the kubelet's own
// heartbeats and status); no policy can ask for them back.
var kubeletCondition = admissionregistrationv1.MatchCondition{
	Name: "exclude-kubelet-requests", Expression: `!("system:nodes" in request.userInfo.groups)`}

// matchConditions are the webhooks' conditions: the exclusions, but for
// status writes when includeStatus, and the kubelet's requests.
func matchConditions(includeStatus bool) []admissionregistrationv1.MatchCondition {
	var out []admissionregistrationv1.MatchCondition
	for _, e := range Exclusions {
		if includeStatus && e.Name == ExclusionStatus {
			continue
		}
		out = append(out, admissionregistrationv1.MatchCondition{Name: "exclude-" + e.Name, Expression: e.Expression})
	}
	return append(out, kubeletCondition)
}

// Needs returns the names of the default exclusions that rules (a
// policy's matchConstraints.resourceRules) can match: requests the policy
// would see in the cluster but the generated webhooks do not send. A rule's
// excludeResourceRules are not subtracted; a needless warning is cheaper
// than a silent gap.
func Needs(rules []admissionregistrationv1.NamedRuleWithOperations) []string {
	var out []string
	for _, e := range Exclusions {
		if slices.ContainsFunc(rules, func(r admissionregistrationv1.NamedRuleWithOperations) bool {
			return slices.ContainsFunc(e.resources, func(gr groupResource) bool { return ruleMatches(r.Rule, gr) })
		}) {
			out = append(out, e.Name)
		}
	}
	return out
}

// ExclusionWhat is the description of the named exclusion.
func ExclusionWhat(name string) string {
	for _, e := range Exclusions {
		if e.Name == name {
			return e.What
		}
	}
	return name
}

// ruleMatches reports whether rule can match a request on gr, as the
// apiserver's rule matcher reads groups and resources: "x/*" matches x and
// every subresource of x.
func ruleMatches(rule admissionregistrationv1.Rule, gr groupResource) bool {
	if gr.group != "*" && !slices.Contains(rule.APIGroups, "*") && !slices.Contains(rule.APIGroups, gr.group) {
		return false
	}
	return slices.ContainsFunc(rule.Resources, func(entry string) bool {
		res, sub, _ := strings.Cut(entry, "/")
		return (sub == "*" || sub == gr.sub) && (res == "*" || gr.resource == "*" || res == gr.resource)
	})
}
