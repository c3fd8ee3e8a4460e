package artifacts_test

import (
	"context"
	"os"
	"path/filepath"
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
	webhookconfig "k8s.io/apiserver/pkg/admission/plugin/webhook/config"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	apiserverinstall "k8s.io/apiserver/pkg/apis/apiserver/install"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/portcullis-dev/portcullis/internal/tenancy/artifacts"
)

const (
	certPEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	keyPEM  = "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n"
)

// TestKubeconfig loads each generated kubeconfig with clientcmd and then asks
// the apiserver's own resolver which credentials it would send to the
// gateway's host:port.
func TestKubeconfig(t *testing.T) {
	tests := []struct {
		name   string
		creds  artifacts.Credentials
		urls   []string
		target string // the host:port the apiserver dials
		check  func(t *testing.T, token, user, pass string, cert, key []byte)
	}{
		{
			name: "token, explicit port", creds: artifacts.Credentials{Token: "pcat_abc"},
			urls: []string{"https://gw.example.com:8443"}, target: "gw.example.com:8443",
			check: func(t *testing.T, token, _, _ string, _, _ []byte) {
				if token != "pcat_abc" {
					t.Fatalf("token %q", token)
				}
			},
		},
		{
			name: "basic, no port", creds: artifacts.Credentials{Username: "pcu_x", Password: "secret"},
			urls: []string{"https://gw.example.com"}, target: "gw.example.com",
			check: func(t *testing.T, _, user, pass string, _, _ []byte) {
				if user != "pcu_x" || pass != "secret" {
					t.Fatalf("basic %q %q", user, pass)
				}
			},
		},
		{
			name:  "certificate, two URLs",
			creds: artifacts.Credentials{ClientCertificatePEM: []byte(certPEM), ClientKeyPEM: []byte(keyPEM)},
			urls:  []string{"https://gw.example.com:8443", "https://10.0.0.1:443/prefix"}, target: "10.0.0.1:443",
			check: func(t *testing.T, _, _, _ string, cert, key []byte) {
				if string(cert) != certPEM || string(key) != keyPEM {
					t.Fatal("certificate or key differ")
				}
			},
		},
		{
			name: "prefix wildcard with port", creds: artifacts.Credentials{Token: "pcat_w"},
			urls: []string{"*.gw.example.com:8443"}, target: "eu.gw.example.com:8443",
			check: func(t *testing.T, token, _, _ string, _, _ []byte) {
				if token != "pcat_w" {
					t.Fatalf("token %q", token)
				}
			},
		},
		{
			name: "default wildcard", creds: artifacts.Credentials{Token: "pcat_star"},
			urls: []string{"*"}, target: "anything:9443",
			check: func(t *testing.T, token, _, _ string, _, _ []byte) {
				if token != "pcat_star" {
					t.Fatalf("token %q", token)
				}
			},
		},
	}
	t.Setenv("KUBECONFIG", "")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := artifacts.Kubeconfig(tc.creds, tc.urls...)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := clientcmd.Load(b)
			if err != nil {
				t.Fatal(err)
			}
			if err := clientcmd.Validate(*cfg); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if len(cfg.AuthInfos) != len(tc.urls) {
				t.Fatalf("%d user entries, want %d", len(cfg.AuthInfos), len(tc.urls))
			}
			file := filepath.Join(t.TempDir(), "kubeconfig")
			if err := os.WriteFile(file, b, 0o600); err != nil {
				t.Fatal(err)
			}
			resolver, err := webhookutil.NewDefaultAuthenticationInfoResolver(file)
			if err != nil {
				t.Fatal(err)
			}
			rc, err := resolver.ClientConfigFor(tc.target)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, rc.BearerToken, rc.Username, rc.Password, rc.TLSClientConfig.CertData, rc.TLSClientConfig.KeyData)
		})
	}
}

func TestKubeconfigErrors(t *testing.T) {
	tests := []struct {
		name  string
		creds artifacts.Credentials
		url   string
	}{
		{"no credentials", artifacts.Credentials{}, "https://gw:8443"},
		{"two credentials", artifacts.Credentials{Token: "t", Username: "u", Password: "p"}, "https://gw:8443"},
		{"username without password", artifacts.Credentials{Username: "u"}, "https://gw:8443"},
		{"certificate without key", artifacts.Credentials{ClientCertificatePEM: []byte(certPEM)}, "https://gw:8443"},
		{"http URL", artifacts.Credentials{Token: "t"}, "http://gw:8443"},
		{"URL with query", artifacts.Credentials{Token: "t"}, "https://gw:8443/?x=1"},
		{"URL with user", artifacts.Credentials{Token: "t"}, "https://me@gw:8443"},
		{"no host", artifacts.Credentials{Token: "t"}, "https:///x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := artifacts.Kubeconfig(tc.creds, tc.url); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

// TestAdmissionConfiguration reads the output as kube-apiserver does:
// admission.ReadAdmissionConfiguration with the apiserver's config scheme
// (strict), then each webhook plugin's config.LoadConfig (strict).
func TestAdmissionConfiguration(t *testing.T) {
	b, err := artifacts.AdmissionConfiguration("/etc/kubernetes/portcullis/kubeconfig.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "admission.yaml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	apiserverinstall.Install(scheme)
	provider, err := admission.ReadAdmissionConfiguration(
		[]string{artifacts.ValidatingPlugin, artifacts.MutatingPlugin}, file, scheme)
	if err != nil {
		t.Fatalf("ReadAdmissionConfiguration: %v\n%s", err, b)
	}
	for _, plugin := range []string{artifacts.ValidatingPlugin, artifacts.MutatingPlugin} {
		r, err := provider.ConfigFor(plugin)
		if err != nil || r == nil {
			t.Fatalf("%s: no configuration (%v)", plugin, err)
		}
		wa, err := webhookconfig.LoadConfig(r)
		if err != nil {
			t.Fatalf("%s: LoadConfig: %v", plugin, err)
		}
		if wa.KubeConfigFile != "/etc/kubernetes/portcullis/kubeconfig.yaml" {
			t.Fatalf("%s: kubeConfigFile %q", plugin, wa.KubeConfigFile)
		}
	}
	if !strings.Contains(string(b), "apiVersion: apiserver.config.k8s.io/v1\n") {
		t.Fatalf("not apiserver.config.k8s.io/v1:\n%s", b)
	}
	if _, err := artifacts.AdmissionConfiguration("relative/kubeconfig"); err == nil {
		t.Fatal("a relative path was accepted")
	}
}

func decodeVWC(t *testing.T, b []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	codecs := serializer.NewCodecFactory(clientgoscheme.Scheme, serializer.EnableStrict)
	obj, gvk, err := codecs.UniversalDeserializer().Decode(b, nil, nil)
	if err != nil {
		t.Fatalf("strict decode: %v\n%s", err, b)
	}
	if gvk.GroupVersion() != admissionregistrationv1.SchemeGroupVersion {
		t.Fatalf("decoded as %v", gvk)
	}
	return obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
}

func TestValidatingWebhookConfiguration(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	obj, err := artifacts.ValidatingWebhookConfiguration(artifacts.WebhookOptions{
		GatewayURL: "https://gw.example.com:8443", Tenant: "acme", CABundle: ca,
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := artifacts.YAML(obj)
	if err != nil {
		t.Fatal(err)
	}
	got := decodeVWC(t, b)
	if got.Name != "portcullis" || len(got.Webhooks) != 1 {
		t.Fatalf("metadata/webhooks: %+v", got)
	}
	w := got.Webhooks[0]
	checks := []struct {
		name string
		ok   bool
	}{
		{"url", w.ClientConfig.URL != nil && *w.ClientConfig.URL == "https://gw.example.com:8443/t/acme/validate"},
		{"no service", w.ClientConfig.Service == nil},
		{"caBundle", string(w.ClientConfig.CABundle) == string(ca)},
		{"admissionReviewVersions", strings.Join(w.AdmissionReviewVersions, ",") == "v1,v1beta1"},
		{"sideEffects", w.SideEffects != nil && *w.SideEffects == admissionregistrationv1.SideEffectClassNone},
		{"timeoutSeconds", w.TimeoutSeconds != nil && *w.TimeoutSeconds == 5},
		{"matchPolicy", w.MatchPolicy != nil && *w.MatchPolicy == admissionregistrationv1.Equivalent},
		{"failurePolicy", w.FailurePolicy != nil && *w.FailurePolicy == admissionregistrationv1.Fail},
		{"matchConditions", conditionNames(w.MatchConditions) == "exclude-leases,exclude-events,exclude-reviews,exclude-pod-binding,exclude-status,exclude-kubelet-requests"},
		{"name is qualified", strings.Count(w.Name, ".") >= 2},
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
		for value, want := range map[string]bool{"true": false, "false": true} {
			if got := sel.Matches(labels.Set{"kubernetes.io/metadata.name": "team-a", artifacts.IgnoreLabel: value}); got != want {
				t.Errorf("namespace labelled %s=%s: matches = %v, want %v", artifacts.IgnoreLabel, value, got, want)
			}
		}
	})

	// The rules and matchConditions are run through the apiserver's own
	// matchers, on the attributes the apiserver would build.
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	leases := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	namespaces := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	events := schema.GroupVersionResource{Version: "v1", Resource: "events"}
	newEvents := schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}
	tokenReviews := schema.GroupVersionResource{Group: "authentication.k8s.io", Version: "v1", Resource: "tokenreviews"}
	sars := schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "subjectaccessreviews"}
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	admin := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	node := &user.DefaultInfo{Name: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}
	accessor := webhook.NewValidatingWebhookAccessor("uid", got.Name, &got.Webhooks[0])
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
		{"pod exec (subresource)", pods, "exec", "default", admission.Connect, admin, true},
		{"pod delete", pods, "", "default", admission.Delete, admin, true},
		{"pod status update by a node", pods, "status", "default", admission.Update, node, false},
		{"lease update", leases, "", "team-a", admission.Update, admin, false},
		{"namespace create", namespaces, "", "", admission.Create, admin, true},
		{"namespace update", namespaces, "", "", admission.Update, admin, true},
		{"event create", events, "", "default", admission.Create, admin, false},
		{"events.k8s.io event create", newEvents, "", "default", admission.Create, admin, false},
		{"token review", tokenReviews, "", "", admission.Create, admin, false},
		{"subject access review", sars, "", "", admission.Create, admin, false},
		{"pod binding by the scheduler", pods, "binding", "default", admission.Create, admin, false},
		{"pod status update by a user", pods, "status", "default", admission.Update, admin, false},
		{"deployment status update", deployments, "status", "default", admission.Update, admin, false},
		{"deployment scale (another subresource)", deployments, "scale", "default", admission.Update, admin, true},
		{"pod eviction", pods, "eviction", "default", admission.Create, admin, true},
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

func conditionNames(cs []admissionregistrationv1.MatchCondition) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return strings.Join(names, ",")
}

func TestValidatingWebhookConfigurationOptions(t *testing.T) {
	ca := []byte("ca")
	ignore := admissionregistrationv1.Ignore
	obj, err := artifacts.ValidatingWebhookConfiguration(artifacts.WebhookOptions{
		GatewayURL: "https://10.0.0.1/portcullis", Tenant: "acme", CABundle: ca, Name: "acme-policies",
		FailurePolicy: ignore, ExcludedNamespaces: []string{}, TimeoutSeconds: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := artifacts.YAML(obj)
	w := decodeVWC(t, b).Webhooks[0]
	// With no namespace excluded by name, the selector keeps only the
	// opt-out label.
	if *w.ClientConfig.URL != "https://10.0.0.1/portcullis/t/acme/validate" || *w.FailurePolicy != ignore ||
		*w.TimeoutSeconds != 3 || len(w.NamespaceSelector.MatchExpressions) != 1 ||
		w.NamespaceSelector.MatchExpressions[0].Key != artifacts.IgnoreLabel {
		t.Fatalf("options not applied:\n%s", b)
	}

	bad := []struct {
		name string
		o    artifacts.WebhookOptions
	}{
		{"no CA", artifacts.WebhookOptions{GatewayURL: "https://gw", Tenant: "acme"}},
		{"http", artifacts.WebhookOptions{GatewayURL: "http://gw", Tenant: "acme", CABundle: ca}},
		{"bad tenant", artifacts.WebhookOptions{GatewayURL: "https://gw", Tenant: "Acme!", CABundle: ca}},
		{"bad failurePolicy", artifacts.WebhookOptions{GatewayURL: "https://gw", Tenant: "acme", CABundle: ca, FailurePolicy: "Maybe"}},
		{"timeout too long", artifacts.WebhookOptions{GatewayURL: "https://gw", Tenant: "acme", CABundle: ca, TimeoutSeconds: 31}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := artifacts.ValidatingWebhookConfiguration(tc.o); err == nil {
				t.Fatal("no error")
			}
		})
	}
}
