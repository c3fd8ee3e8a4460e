package security

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/portcullis-dev/portcullis/internal/tenancy/artifacts"
)

// Attack 8.1: with the gateway unreachable, failurePolicy Fail on every
// resource stops Events, TokenReviews, SubjectAccessReviews, pods/binding
// and status writes. The generated webhooks.yaml, decoded strictly with
// client-go's scheme and run through the apiserver's own rule matcher and
// matchCondition evaluator, must not send them.
func TestGeneratedWebhooksLeaveClusterTrafficAlone(t *testing.T) {
	vwc, err := artifacts.ValidatingWebhookConfiguration(artifacts.WebhookOptions{
		GatewayURL: "https://gw.example.com", Tenant: "acme", CABundle: []byte("ca")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := artifacts.YAML(vwc)
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := serializer.NewCodecFactory(clientgoscheme.Scheme, serializer.EnableStrict).UniversalDeserializer().Decode(b, nil, nil)
	if err != nil {
		t.Fatalf("strict decode: %v", err)
	}
	w := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks[0]
	matcher := webhook.NewValidatingWebhookAccessor("uid", "portcullis", &w).GetCompiledMatcher(
		plugincel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())))
	nsSel, err := metav1.LabelSelectorAsSelector(w.NamespaceSelector)
	if err != nil {
		t.Fatal(err)
	}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	gvr := func(group, resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: group, Version: "v1", Resource: resource}
	}
	tests := []struct {
		name     string
		gvr      schema.GroupVersionResource
		sub      string
		op       admission.Operation
		nsLabels map[string]string
		want     bool
	}{
		{"an event", gvr("", "events"), "", admission.Create, nil, false},
		{"an events.k8s.io event", gvr("events.k8s.io", "events"), "", admission.Create, nil, false},
		{"a TokenReview", gvr("authentication.k8s.io", "tokenreviews"), "", admission.Create, nil, false},
		{"a SubjectAccessReview", gvr("authorization.k8s.io", "subjectaccessreviews"), "", admission.Create, nil, false},
		{"a LocalSubjectAccessReview", gvr("authorization.k8s.io", "localsubjectaccessreviews"), "", admission.Create, nil, false},
		{"pods/binding", gvr("", "pods"), "binding", admission.Create, nil, false},
		{"a pod status update", gvr("", "pods"), "status", admission.Update, nil, false},
		{"a lease", gvr("coordination.k8s.io", "leases"), "", admission.Update, nil, false},
		{"a pod in an opted-out namespace", gvr("", "pods"), "", admission.Create, map[string]string{artifacts.IgnoreLabel: "true"}, false},
		{"a pod (still sent)", gvr("", "pods"), "", admission.Create, nil, true},
		{"a pod eviction (still sent)", gvr("", "pods"), "eviction", admission.Create, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
			attr := admission.NewAttributesRecord(&corev1.Pod{}, nil, kind, "team-a", "x", tt.gvr, tt.sub, tt.op, nil, false, alice)
			ruleMatch := false
			for _, r := range w.Rules {
				ruleMatch = ruleMatch || (&rules.Matcher{Rule: r, Attr: attr}).Matches()
			}
			res := matcher.Match(context.Background(), &admission.VersionedAttributes{Attributes: attr,
				VersionedObject: admission.NewLazyObject(&corev1.Pod{}), VersionedKind: kind}, nil, nil)
			if res.Error != nil {
				t.Fatalf("matchConditions: %v", res.Error)
			}
			nsLabels := labels.Set{"kubernetes.io/metadata.name": "team-a"}
			for k, v := range tt.nsLabels {
				nsLabels[k] = v
			}
			if got := ruleMatch && res.Matches && nsSel.Matches(nsLabels); got != tt.want {
				t.Fatalf("sent = %v (rules %v, conditions %v), want %v", got, ruleMatch, res.Matches, tt.want)
			}
		})
	}
}
