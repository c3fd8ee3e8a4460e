package artifacts_test

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/portcullis-dev/portcullis/internal/tenancy/artifacts"
)

// With IncludeStatus (a policy of the tenant matches status writes), the
// webhooks send status writes; everything else stays excluded.
func TestIncludeStatus(t *testing.T) {
	obj, err := artifacts.ValidatingWebhookConfiguration(artifacts.WebhookOptions{
		GatewayURL: "https://gw.example.com", Tenant: "acme", CABundle: []byte("ca"), IncludeStatus: true})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := artifacts.YAML(obj)
	got := decodeVWC(t, b)
	w := got.Webhooks[0]
	if names := conditionNames(w.MatchConditions); strings.Contains(names, "exclude-status") {
		t.Fatalf("status still excluded: %s", names)
	}
	matcher := webhook.NewValidatingWebhookAccessor("uid", got.Name, &w).GetCompiledMatcher(
		plugincel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())))
	admin := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	for _, tc := range []struct {
		name string
		gvr  schema.GroupVersionResource
		sub  string
		want bool
	}{
		{"pod status", schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "status", true},
		{"event", schema.GroupVersionResource{Version: "v1", Resource: "events"}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attr := admission.NewAttributesRecord(&corev1.Pod{}, nil, schema.GroupVersionKind{Version: "v1", Kind: "Pod"},
				"default", "x", tc.gvr, tc.sub, admission.Update, nil, false, admin)
			res := matcher.Match(context.Background(), &admission.VersionedAttributes{Attributes: attr,
				VersionedObject: admission.NewLazyObject(&corev1.Pod{}), VersionedKind: attr.GetKind()}, nil, nil)
			if res.Error != nil || res.Matches != tc.want {
				t.Fatalf("conditions match = %v (%v), want %v", res.Matches, res.Error, tc.want)
			}
		})
	}
}

func TestNeeds(t *testing.T) {
	rule := func(groups []string, resources ...string) admissionregistrationv1.NamedRuleWithOperations {
		return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{"*"},
			Rule:       admissionregistrationv1.Rule{APIGroups: groups, APIVersions: []string{"*"}, Resources: resources}}}
	}
	tests := []struct {
		name  string
		rules []admissionregistrationv1.NamedRuleWithOperations
		want  string
	}{
		{"pods only", []admissionregistrationv1.NamedRuleWithOperations{rule([]string{""}, "pods")}, ""},
		{"pods and their subresources", []admissionregistrationv1.NamedRuleWithOperations{rule([]string{""}, "pods/*")}, "pod-binding,status"},
		{"deployment status", []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"apps"}, "deployments/status")}, "status"},
		{"every top-level resource", []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"*"}, "*")}, "leases,events,reviews"},
		{"everything", []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"*"}, "*/*")}, "leases,events,reviews,pod-binding,status"},
		{"events.k8s.io events", []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"events.k8s.io"}, "events")}, "events"},
		{"token reviews", []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"authentication.k8s.io"}, "tokenreviews")}, "reviews"},
		{"a scale subresource", []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"apps"}, "deployments/scale")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(artifacts.Needs(tt.rules), ","); got != tt.want {
				t.Fatalf("Needs = %q, want %q", got, tt.want)
			}
		})
	}
}

// The apiserver allows at most 64 matchConditions on a webhook, each a
// boolean CEL expression on request (and object, oldObject, authorizer),
// compiled with the environment of newly written expressions when the
// configuration is created.
func TestMatchConditionsCompile(t *testing.T) {
	obj, err := artifacts.MutatingWebhookConfiguration(artifacts.WebhookOptions{
		GatewayURL: "https://gw.example.com", Tenant: "acme", CABundle: []byte("ca")})
	if err != nil {
		t.Fatal(err)
	}
	conds := obj.Webhooks[0].MatchConditions
	if len(conds) > 64 {
		t.Fatalf("%d matchConditions, the apiserver allows 64", len(conds))
	}
	compiler := plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	for _, c := range conds {
		res := compiler.CompileCELExpression(&matchconditions.MatchCondition{Name: c.Name, Expression: c.Expression},
			plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, environment.NewExpressions)
		if res.Error != nil {
			t.Errorf("%s: %v", c.Name, res.Error)
		}
	}
}
