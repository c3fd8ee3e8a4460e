// Package artifacts generates what a cluster's admin installs so that its
// apiservers call the gateway: the kubeconfig with the apiserver's
// credentials, the AdmissionConfiguration that points the webhook admission
// plugins at it, and the Validating- and MutatingWebhookConfiguration.
//
// The functions are pure: no database, no network. The admin API and CLI
// expose them. Everything produced here must be accepted unchanged by a real
// kube-apiserver; the tests decode it with the apiserver's own loaders.
package artifacts

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	webhookadmissionv1 "k8s.io/apiserver/pkg/admission/plugin/webhook/config/apis/webhookadmission/v1"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// Credentials is what the kubeconfig's user entry carries: exactly one of a
// bearer token, a username with a password, or a client certificate with its
// key (PEM).
type Credentials struct {
	Token                string
	Username, Password   string
	ClientCertificatePEM []byte
	ClientKeyPEM         []byte
}

func (c Credentials) authInfo() (*clientcmdapi.AuthInfo, error) {
	n := 0
	ai := clientcmdapi.NewAuthInfo()
	if c.Token != "" {
		n++
		ai.Token = c.Token
	}
	if c.Username != "" || c.Password != "" {
		n++
		if c.Username == "" || c.Password == "" {
			return nil, errors.New("basic auth needs both a username and a password")
		}
		ai.Username, ai.Password = c.Username, c.Password
	}
	if len(c.ClientCertificatePEM) > 0 || len(c.ClientKeyPEM) > 0 {
		n++
		if len(c.ClientCertificatePEM) == 0 || len(c.ClientKeyPEM) == 0 {
			return nil, errors.New("a client certificate needs both the certificate and its key")
		}
		ai.ClientCertificateData, ai.ClientKeyData = c.ClientCertificatePEM, c.ClientKeyPEM
	}
	if n != 1 {
		return nil, fmt.Errorf("exactly one of a token, basic auth or a client certificate is needed, got %d", n)
	}
	return ai, nil
}

// parseGatewayURL checks an https URL with a host and no query, fragment or
// user info, as the apiserver requires of a webhook URL.
func parseGatewayURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("gateway URL: %w", err)
	}
	switch {
	case u.Scheme != "https":
		return nil, fmt.Errorf("gateway URL %q: the scheme must be https", raw)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("gateway URL %q: a host is needed", raw)
	case u.User != nil:
		return nil, fmt.Errorf("gateway URL %q: user info is not allowed", raw)
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return nil, fmt.Errorf("gateway URL %q: a query or fragment is not allowed", raw)
	}
	return u, nil
}

// UserName is the name of the kubeconfig user entry that an apiserver picks
// for a webhook at gatewayURL: the URL's host, with its port when the URL
// has one, exactly as written in the URL.
func UserName(gatewayURL string) (string, error) {
	u, err := parseGatewayURL(gatewayURL)
	if err != nil {
		return "", err
	}
	return u.Host, nil
}

// Kubeconfig returns the kubeconfig that an apiserver reads from the
// kubeConfigFile of its AdmissionConfiguration. It has one user entry per
// distinct host:port of gatewayURLs, named as UserName says, each with
// creds. An entry name may also be given directly as "*.example.com" (a
// prefix wildcard the apiserver matches against the host) or "*" (any
// host); see the Kubernetes documentation on authenticating apiservers.
//
// The result is written with clientcmd and checked with clientcmd.Validate.
func Kubeconfig(creds Credentials, gatewayURLs ...string) ([]byte, error) {
	if len(gatewayURLs) == 0 {
		return nil, errors.New("at least one gateway URL is needed")
	}
	ai, err := creds.authInfo()
	if err != nil {
		return nil, err
	}
	cfg := clientcmdapi.NewConfig()
	for _, g := range gatewayURLs {
		name := g
		if !isWildcard(g) {
			if name, err = UserName(g); err != nil {
				return nil, err
			}
		}
		cfg.AuthInfos[name] = ai.DeepCopy()
	}
	if err := clientcmd.Validate(*cfg); err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return clientcmd.Write(*cfg)
}

// isWildcard reports whether s is "*" or "*.<dns subdomain>[:port]".
func isWildcard(s string) bool {
	if s == "*" {
		return true
	}
	rest, ok := strings.CutPrefix(s, "*.")
	if !ok {
		return false
	}
	host, _, _ := strings.Cut(rest, ":")
	return len(validation.IsDNS1123Subdomain(host)) == 0
}

// Plugin names of the two webhook admission plugins.
const (
	ValidatingPlugin = "ValidatingAdmissionWebhook"
	MutatingPlugin   = "MutatingAdmissionWebhook"
)

// AdmissionConfiguration returns an apiserver.config.k8s.io/v1
// AdmissionConfiguration, for the apiserver's
// --admission-control-config-file, that points both webhook admission
// plugins at the kubeconfig at kubeconfigPath. The apiserver requires an
// absolute path.
func AdmissionConfiguration(kubeconfigPath string) ([]byte, error) {
	if !path.IsAbs(kubeconfigPath) {
		return nil, fmt.Errorf("kubeconfig path %q: the apiserver requires an absolute path", kubeconfigPath)
	}
	inner, err := json.Marshal(webhookadmissionv1.WebhookAdmission{
		TypeMeta:       metav1.TypeMeta{APIVersion: webhookadmissionv1.SchemeGroupVersion.String(), Kind: "WebhookAdmissionConfiguration"},
		KubeConfigFile: kubeconfigPath,
	})
	if err != nil {
		return nil, err
	}
	cfg := apiserverv1.AdmissionConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: apiserverv1.SchemeGroupVersion.String(), Kind: "AdmissionConfiguration"},
	}
	for _, name := range []string{ValidatingPlugin, MutatingPlugin} {
		cfg.Plugins = append(cfg.Plugins, apiserverv1.AdmissionPluginConfiguration{
			Name:          name,
			Configuration: &runtime.Unknown{Raw: inner, ContentType: runtime.ContentTypeJSON},
		})
	}
	return yaml.Marshal(cfg)
}

// WebhookOptions configure ValidatingWebhookConfiguration.
type WebhookOptions struct {
	// GatewayURL is the gateway's webhook listener as apiservers reach it:
	// https://host[:port][/prefix]. Required.
	GatewayURL string
	// Tenant is the tenant's name, the {tenant} of /t/{tenant}/validate.
	Tenant string
	// CABundle is the PEM CA bundle that verifies the gateway's serving
	// certificate. Required.
	CABundle []byte
	// Name is metadata.name. Default "portcullis".
	Name string
	// FailurePolicy defaults to Fail.
	FailurePolicy admissionregistrationv1.FailurePolicyType
	// ExcludedNamespaces are left out by the namespaceSelector. nil means
	// DefaultExcludedNamespaces; an empty non-nil slice excludes none.
	ExcludedNamespaces []string
	// TimeoutSeconds defaults to DefaultTimeoutSeconds.
	TimeoutSeconds int32
	// URLSecret is the secret of a url credential, for clusters that
	// authenticate by their webhook URL; see URLSecretPath.
	URLSecret string
	// IncludeStatus sends */status writes, which are left out by default
	// (Exclusions): set it when a policy of the tenant matches them (Needs).
	IncludeStatus bool
}

// Defaults of WebhookOptions.
const (
	DefaultWebhookConfigurationName = "portcullis"
	DefaultTimeoutSeconds           = 5
	// WebhookName is the name of the webhook inside the configuration.
	WebhookName = "validate.portcullis.dev"
)

// DefaultExcludedNamespaces are left out unless WebhookOptions say otherwise:
// the webhook good practices keep control-plane and node-lease traffic away
// from webhooks.
var DefaultExcludedNamespaces = []string{"kube-system", "kube-node-lease"}

// hookSettings are WebhookOptions checked and defaulted, shared by the
// validating and the mutating configuration.
type hookSettings struct {
	url         *url.URL
	secret      string
	name        string
	failure     admissionregistrationv1.FailurePolicyType
	timeout     int32
	nsSelector  *metav1.LabelSelector
	sideEffects admissionregistrationv1.SideEffectClass
	matchPolicy admissionregistrationv1.MatchPolicyType
	conditions  []admissionregistrationv1.MatchCondition
}

func (o WebhookOptions) settings() (*hookSettings, error) {
	u, err := parseGatewayURL(o.GatewayURL)
	if err != nil {
		return nil, err
	}
	if errs := validation.IsDNS1123Label(o.Tenant); len(errs) > 0 {
		return nil, fmt.Errorf("tenant %q: %s", o.Tenant, strings.Join(errs, "; "))
	}
	if err := checkURLSecret(o.URLSecret); err != nil {
		return nil, err
	}
	if len(o.CABundle) == 0 {
		return nil, errors.New("a CA bundle for the gateway's serving certificate is needed")
	}
	name := o.Name
	if name == "" {
		name = DefaultWebhookConfigurationName
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, fmt.Errorf("name %q: %s", name, strings.Join(errs, "; "))
	}
	failure := o.FailurePolicy
	switch failure {
	case "":
		failure = admissionregistrationv1.Fail
	case admissionregistrationv1.Fail, admissionregistrationv1.Ignore:
	default:
		return nil, fmt.Errorf("failurePolicy %q: must be Fail or Ignore", failure)
	}
	timeout := o.TimeoutSeconds
	if timeout == 0 {
		timeout = DefaultTimeoutSeconds
	}
	if timeout < 1 || timeout > 30 {
		return nil, fmt.Errorf("timeoutSeconds %d: must be between 1 and 30", timeout)
	}
	excluded := o.ExcludedNamespaces
	if excluded == nil {
		excluded = DefaultExcludedNamespaces
	}
	nsSelector := &metav1.LabelSelector{}
	if len(excluded) > 0 {
		nsSelector.MatchExpressions = append(nsSelector.MatchExpressions, metav1.LabelSelectorRequirement{
			Key:      "kubernetes.io/metadata.name",
			Operator: metav1.LabelSelectorOpNotIn,
			Values:   append([]string(nil), excluded...),
		})
	}
	nsSelector.MatchExpressions = append(nsSelector.MatchExpressions, metav1.LabelSelectorRequirement{
		Key: IgnoreLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"true"},
	})
	return &hookSettings{url: u, secret: o.URLSecret, name: name, failure: failure, timeout: timeout, nsSelector: nsSelector,
		sideEffects: admissionregistrationv1.SideEffectClassNone, matchPolicy: admissionregistrationv1.Equivalent,
		conditions: matchConditions(o.IncludeStatus)}, nil
}

// hookURL is the tenant's endpoint under the gateway URL, with the URL
// secret when there is one.
func (h *hookSettings) hookURL(tenant, endpoint string) *string {
	u := *h.url
	u.Path = path.Join("/", h.url.Path, URLSecretPath(tenant, h.secret, endpoint))
	u.RawPath = ""
	s := u.String()
	return &s
}

func (h *hookSettings) meta(kind, tenant string) (metav1.TypeMeta, metav1.ObjectMeta) {
	return metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: kind},
		metav1.ObjectMeta{
			Name:   h.name,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "portcullis", "portcullis.dev/tenant": tenant},
		}
}

// ValidatingWebhookConfiguration returns the admissionregistration.k8s.io/v1
// configuration that sends a tenant's admission requests to the gateway:
//   - url https://<gateway>/t/<tenant>/validate, with CABundle;
//   - every operation on every resource and subresource, plus an explicit
//     rule for namespaces, so the gateway learns namespace labels even if
//     the first rule is narrowed;
//   - admissionReviewVersions [v1, v1beta1], sideEffects None,
//     timeoutSeconds 5, matchPolicy Equivalent, failurePolicy Fail;
//   - a namespaceSelector leaving out kube-system, kube-node-lease and
//     namespaces labelled portcullis.dev/ignore=true (IgnoreLabel);
//   - matchConditions leaving out the Exclusions (status writes unless
//     IncludeStatus) and the kubelet's requests. Webhook rules cannot
//     exclude a resource, and enumerating every other one would miss
//     those added later; the apiserver evaluates matchConditions itself,
//     after the rules, before calling.
func ValidatingWebhookConfiguration(o WebhookOptions) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	h, err := o.settings()
	if err != nil {
		return nil, err
	}
	all := admissionregistrationv1.AllScopes
	cluster := admissionregistrationv1.ClusterScope
	typeMeta, objectMeta := h.meta("ValidatingWebhookConfiguration", o.Tenant)
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   typeMeta,
		ObjectMeta: objectMeta,
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: WebhookName,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				URL:      h.hookURL(o.Tenant, "validate"),
				CABundle: append([]byte(nil), o.CABundle...),
			},
			Rules: []admissionregistrationv1.RuleWithOperations{
				{
					Operations: []admissionregistrationv1.OperationType{
						admissionregistrationv1.Create, admissionregistrationv1.Update,
						admissionregistrationv1.Delete, admissionregistrationv1.Connect,
					},
					Rule: admissionregistrationv1.Rule{
						APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}, Scope: &all,
					},
				},
				{
					Operations: []admissionregistrationv1.OperationType{
						admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete,
					},
					Rule: admissionregistrationv1.Rule{
						APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"namespaces"}, Scope: &cluster,
					},
				},
			},
			FailurePolicy:           &h.failure,
			MatchPolicy:             &h.matchPolicy,
			NamespaceSelector:       h.nsSelector,
			ObjectSelector:          &metav1.LabelSelector{},
			SideEffects:             &h.sideEffects,
			TimeoutSeconds:          &h.timeout,
			AdmissionReviewVersions: []string{"v1", "v1beta1"},
			MatchConditions:         h.conditions,
		}},
	}, nil
}

// YAML renders a generated object (it carries its apiVersion and kind).
func YAML(obj any) ([]byte, error) { return yaml.Marshal(obj) }
