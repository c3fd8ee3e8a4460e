package api

import (
	"fmt"
	"strings"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
	"github.com/portcullis-dev/portcullis/internal/tenancy/artifacts"
)

func (s *Server) artifactRoutes() []route {
	return []route{
		{method: "GET", path: clusterPath + "/artifacts",
			summary:  "The cluster's AdmissionConfiguration and webhook configuration (the kubeconfig comes with a credential)",
			access:   tenantViewer,
			query:    []param{{"webhookURL", "the gateway's webhook address as the cluster reaches it; the server's default when empty"}},
			response: apiv1.Artifacts{}, handle: s.getArtifacts},
	}
}

func (s *Server) getArtifacts(c *call) error {
	if _, err := s.cluster(c); err != nil {
		return err
	}
	u, err := s.webhookURL("webhookURL", c.query("webhookURL"))
	if err != nil {
		return err
	}
	a, err := s.artifacts(c.tenant.Name, u)
	if err != nil {
		return err
	}
	return c.json(a)
}

// artifacts renders what every cluster of the tenant installs, whatever its
// credential. webhookURL has been checked.
func (s *Server) artifacts(tenant, webhookURL string) (apiv1.Artifacts, error) {
	ac, err := artifacts.AdmissionConfiguration(apiv1.KubeconfigPath)
	if err != nil {
		return apiv1.Artifacts{}, err
	}
	ca, err := s.caBundle()
	if err != nil {
		return apiv1.Artifacts{}, err
	}
	// The validating and the mutating configuration, one YAML stream.
	hooks, err := artifacts.Webhooks(artifacts.WebhookOptions{
		GatewayURL: webhookURL, Tenant: tenant, CABundle: ca})
	if err != nil {
		return apiv1.Artifacts{}, fmt.Errorf("webhook configuration: %w", err)
	}
	return apiv1.Artifacts{AdmissionConfiguration: string(ac), Webhooks: string(hooks)}, nil
}

// artifactsFor renders what a cluster installs with a new credential of
// typ. A url credential needs no AdmissionConfiguration nor kubeconfig, and
// its webhooks hold its secret, which is not issued yet: they are rendered
// here with a placeholder of the secret's shape, so that rendering them
// with the secret (issued) cannot fail once the secret exists.
func (s *Server) artifactsFor(tenant, webhookURL string, typ tenancy.CredentialType) (apiv1.Artifacts, error) {
	if typ != tenancy.CredentialURL {
		return s.artifacts(tenant, webhookURL)
	}
	hooks, err := s.urlWebhooks(tenant, webhookURL, urlSecretPlaceholder)
	if err != nil {
		return apiv1.Artifacts{}, err
	}
	return apiv1.Artifacts{Webhooks: string(hooks), WebhooksHoldSecret: true}, nil
}

// urlSecretPlaceholder has the shape of a URL secret.
var urlSecretPlaceholder = tenancy.URLSecretPrefix + strings.Repeat("a", 52)

// urlWebhooks renders the webhooks of a url credential with its secret.
func (s *Server) urlWebhooks(tenant, webhookURL, secret string) ([]byte, error) {
	ca, err := s.caBundle()
	if err != nil {
		return nil, err
	}
	hooks, err := artifacts.Webhooks(artifacts.WebhookOptions{
		GatewayURL: webhookURL, Tenant: tenant, CABundle: ca, URLSecret: secret})
	if err != nil {
		return nil, fmt.Errorf("webhook configuration: %w", err)
	}
	return hooks, nil
}

// webhookURL checks the webhook URL a caller gave, or picks the server's.
func (s *Server) webhookURL(field, u string) (string, error) {
	if u == "" {
		u = s.WebhookURL
	}
	if u == "" {
		return "", fault.InvalidField(field, "is required: this gateway has no default webhook URL")
	}
	if _, err := artifacts.UserName(u); err != nil {
		return "", fault.InvalidField(field, "%v", err)
	}
	return u, nil
}

// caBundle reads the webhook's CA bundle for one set of artifacts.
func (s *Server) caBundle() ([]byte, error) {
	ca, err := s.CABundle()
	if err != nil {
		return nil, fault.Wrap(err, fault.Unavailable, "the webhook's CA bundle cannot be read on this replica; its operator must fix --webhook-ca-bundle")
	}
	return ca, nil
}
