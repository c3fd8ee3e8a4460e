package artifacts_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
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

func decodeMWC(t *testing.T, b []byte) *admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	codecs := serializer.NewCodecFactory(clientgoscheme.Scheme, serializer.EnableStrict)
	obj, gvk, err := codecs.UniversalDeserializer().Decode(b, nil, nil)
	if err != nil {
		t.Fatalf("strict decode: %v\n%s", err, b)
	}
	if gvk.GroupVersion() != admissionregistrationv1.SchemeGroupVersion {
		t.Fatalf("decoded as %v", gvk)
	}
	mwc, ok := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
	if !ok {
		t.Fatalf("decoded a %T", obj)
	}
	return mwc
}

func TestMutatingWebhookConfiguration(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	obj, err := artifacts.MutatingWebhookConfiguration(artifacts.WebhookOptions{
		GatewayURL: "https://gw.example.com:8443", Tenant: "acme", CABundle: ca,
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := artifacts.YAML(obj)
	if err != nil {
		t.Fatal(err)
	}
	got := decodeMWC(t, b)
	if got.Name != "portcullis" || len(got.Webhooks) != 1 || got.Labels["portcullis.dev/tenant"] != "acme" {
		t.Fatalf("metadata/webhooks: %+v", got)
	}
	w := got.Webhooks[0]
	checks := []struct {
		name string
		ok   bool
	}{
		{"url", w.ClientConfig.URL != nil && *w.ClientConfig.URL == "https://gw.example.com:8443/t/acme/mutate"},
		{"no service", w.ClientConfig.Service == nil},
		{"caBundle", string(w.ClientConfig.CABundle) == string(ca)},
		{"admissionReviewVersions", strings.Join(w.AdmissionReviewVersions, ",") == "v1"},
		{"sideEffects", w.SideEffects != nil && *w.SideEffects == admissionregistrationv1.SideEffectClassNone},
		{"timeoutSeconds", w.TimeoutSeconds != nil && *w.TimeoutSeconds == 5},
		{"matchPolicy", w.MatchPolicy != nil && *w.MatchPolicy == admissionregistrationv1.Equivalent},
		{"failurePolicy", w.FailurePolicy != nil && *w.FailurePolicy == admissionregistrationv1.Fail},
		{"reinvocationPolicy", w.ReinvocationPolicy != nil && *w.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy},
		{"matchConditions", conditionNames(w.MatchConditions) == "exclude-leases,exclude-events,exclude-reviews,exclude-pod-binding,exclude-status,exclude-kubelet-requests"},
		{"name is qualified and not the validating one", strings.Count(w.Name, ".") >= 2 && w.Name != artifacts.WebhookName},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: wrong in\n%s", c.name, b)
		}
	}

	t.Run("namespaceSelector", func(t *testing.T) {
		sel, err := metav1.LabelSelectorAsSelector(w.NamespaceSelector)
		if err != nil {
			t.Fatal(err)
		}
		for ns, want := range map[string]bool{"default": true, "team-a": true, "kube-system": false, "kube-node-lease": false} {
			if got := sel.Matches(labels.Set{"kubernetes.io/metadata.name": ns}); got != want {
				t.Errorf("namespace %s: matches = %v, want %v", ns, got, want)
			}
		}
	})

	// The apiserver's own matchers decide what it would send: every
	// resource a policy could mutate, whatever policies exist today.
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1alpha1", Resource: "widgets"}
	leases := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	namespaces := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	admin := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	node := &user.DefaultInfo{Name: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}
	accessor := webhook.NewMutatingWebhookAccessor("uid", got.Name, &got.Webhooks[0])
	matcher := accessor.GetCompiledMatcher(plugincel.NewConditionCompiler(
		environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())))
	cases := []struct {
		name        string
		gvr         schema.GroupVersionResource
		subresource string
		namespace   string
		op          admission.Operation
		user        user.Info
		want        bool
	}{
		{"pod create by a user", pods, "", "default", admission.Create, admin, true},
		{"pod update", pods, "", "default", admission.Update, admin, true},
		{"pod exec (subresource)", pods, "exec", "default", admission.Connect, admin, true},
		{"deployment scale", deployments, "scale", "team-a", admission.Update, admin, true},
		{"a custom resource", widgets, "", "team-a", admission.Create, admin, true},
		{"namespace create", namespaces, "", "", admission.Create, admin, true},
		{"pod delete: never mutated", pods, "", "default", admission.Delete, admin, false},
		{"pod status update by a node", pods, "status", "default", admission.Update, node, false},
		{"lease update", leases, "", "team-a", admission.Update, admin, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var obj runtime.Object = &corev1.Pod{}
			kind := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
			if tc.gvr == namespaces {
				obj, kind = &corev1.Namespace{}, schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
			}
			attr := admission.NewAttributesRecord(obj, nil, kind, tc.namespace, "x", tc.gvr, tc.subresource,
				tc.op, nil, false, tc.user)
			ruleMatch := false
			for _, r := range w.Rules {
				m := rules.Matcher{Rule: r, Attr: attr}
				ruleMatch = ruleMatch || m.Matches()
			}
			res := matcher.Match(context.Background(), &admission.VersionedAttributes{
				Attributes: attr, VersionedObject: admission.NewLazyObject(obj), VersionedKind: kind,
			}, nil, nil)
			if res.Error != nil {
				t.Fatalf("matchConditions: %v", res.Error)
			}
			if got := ruleMatch && res.Matches; got != tc.want {
				t.Fatalf("sent to the webhook = %v (rules %v, conditions %v), want %v",
					got, ruleMatch, res.Matches, tc.want)
			}
		})
	}
}

// The options, and their errors, are the validating configuration's.
func TestMutatingWebhookConfigurationOptions(t *testing.T) {
	ca := []byte("ca")
	ignore := admissionregistrationv1.Ignore
	obj, err := artifacts.MutatingWebhookConfiguration(artifacts.WebhookOptions{
		GatewayURL: "https://10.0.0.1/portcullis", Tenant: "acme", CABundle: ca, Name: "acme-policies",
		FailurePolicy: ignore, ExcludedNamespaces: []string{}, TimeoutSeconds: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := artifacts.YAML(obj)
	got := decodeMWC(t, b)
	w := got.Webhooks[0]
	if got.Name != "acme-policies" || *w.ClientConfig.URL != "https://10.0.0.1/portcullis/t/acme/mutate" || *w.FailurePolicy != ignore ||
		*w.TimeoutSeconds != 3 || len(w.NamespaceSelector.MatchExpressions) != 1 ||
		w.NamespaceSelector.MatchExpressions[0].Key != artifacts.IgnoreLabel {
		t.Fatalf("options not applied:\n%s", b)
	}
	for _, o := range []artifacts.WebhookOptions{
		{GatewayURL: "https://gw", Tenant: "acme"},
		{GatewayURL: "http://gw", Tenant: "acme", CABundle: ca},
		{GatewayURL: "https://gw", Tenant: "Acme!", CABundle: ca},
		{GatewayURL: "https://gw", Tenant: "acme", CABundle: ca, FailurePolicy: "Maybe"},
		{GatewayURL: "https://gw", Tenant: "acme", CABundle: ca, TimeoutSeconds: 31},
	} {
		if _, err := artifacts.MutatingWebhookConfiguration(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
		if _, err := artifacts.Webhooks(o); err == nil {
			t.Errorf("Webhooks(%+v): no error", o)
		}
	}
}

// webhooks.yaml holds the validating configuration, exactly as before,
// then the mutating one, as two YAML documents kubectl applies together.
func TestWebhooksStream(t *testing.T) {
	o := artifacts.WebhookOptions{GatewayURL: "https://gw.example.com", Tenant: "acme", CABundle: []byte("ca")}
	b, err := artifacts.Webhooks(o)
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(b, []byte("\n---\n"))
	if len(docs) != 2 {
		t.Fatalf("%d documents:\n%s", len(docs), b)
	}
	vwc, _ := artifacts.ValidatingWebhookConfiguration(o)
	want, _ := artifacts.YAML(vwc)
	if string(docs[0])+"\n" != string(want) {
		t.Fatalf("first document is not the validating configuration:\n%s", docs[0])
	}
	if got := decodeVWC(t, docs[0]); *got.Webhooks[0].ClientConfig.URL != "https://gw.example.com/t/acme/validate" {
		t.Fatalf("validating: %+v", got)
	}
	if got := decodeMWC(t, docs[1]); *got.Webhooks[0].ClientConfig.URL != "https://gw.example.com/t/acme/mutate" {
		t.Fatalf("mutating: %+v", got)
	}
}
