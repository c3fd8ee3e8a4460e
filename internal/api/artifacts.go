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
	u, err := s.webhookURL(c, "webhookURL", c.query("webhookURL"))
	if err != nil {
		return err
	}
	a, err := s.artifacts(c, u)
	if err != nil {
		return err
	}
	return c.json(a)
}

// webhookOptions is how the tenant's webhook configurations are rendered
// for webhookURL (checked), with a warning for each default exclusion a
// policy of the tenant needs: the webhooks send status writes when a
// policy matches them; a policy that matches another default exclusion
// gets a warning, since the webhooks never send those.
func (s *Server) webhookOptions(c *call, webhookURL string) (artifacts.WebhookOptions, []string, error) {
	ca, err := s.caBundle()
	if err != nil {
		return artifacts.WebhookOptions{}, nil, err
	}
	needs, err := s.tenantNeeds(c)
	if err != nil {
		return artifacts.WebhookOptions{}, nil, err
	}
	includeStatus := false
	var warnings []string
	for _, n := range needs {
		if n.exclusion == artifacts.ExclusionStatus {
			includeStatus = true
			continue
		}
		warnings = append(warnings, exclusionWarning(n.policy, n.exclusion))
	}
	return artifacts.WebhookOptions{GatewayURL: webhookURL, Tenant: c.tenant.Name, CABundle: ca, IncludeStatus: includeStatus}, warnings, nil
}

// artifacts renders what every cluster of the tenant installs, whatever its
// credential (but a url credential): the AdmissionConfiguration and the
// validating and mutating webhook configurations, one YAML stream.
func (s *Server) artifacts(c *call, webhookURL string) (apiv1.Artifacts, error) {
	ac, err := artifacts.AdmissionConfiguration(apiv1.KubeconfigPath)
	if err != nil {
		return apiv1.Artifacts{}, err
	}
	opts, warnings, err := s.webhookOptions(c, webhookURL)
	if err != nil {
		return apiv1.Artifacts{}, err
	}
	hooks, err := artifacts.Webhooks(opts)
	if err != nil {
		return apiv1.Artifacts{}, fmt.Errorf("webhook configuration: %w", err)
	}
	return apiv1.Artifacts{AdmissionConfiguration: string(ac), Webhooks: string(hooks), Warnings: warnings}, nil
}

// artifactsFor renders what a cluster installs with a new credential of
// typ, and the options its webhooks were rendered with. A url credential
// needs no AdmissionConfiguration nor kubeconfig, and its webhooks hold its
// secret, which is not issued yet: they are rendered here with a
// placeholder of the secret's shape, so that rendering them again with the
// secret (urlWebhooks, once issued) cannot fail.
func (s *Server) artifactsFor(c *call, webhookURL string, typ tenancy.CredentialType) (apiv1.Artifacts, artifacts.WebhookOptions, error) {
	if typ != tenancy.CredentialURL {
		a, err := s.artifacts(c, webhookURL)
		return a, artifacts.WebhookOptions{}, err
	}
	opts, warnings, err := s.webhookOptions(c, webhookURL)
	if err != nil {
		return apiv1.Artifacts{}, opts, err
	}
	hooks, err := urlWebhooks(opts, urlSecretPlaceholder)
	if err != nil {
		return apiv1.Artifacts{}, opts, err
	}
	return apiv1.Artifacts{Webhooks: string(hooks), WebhooksHoldSecret: true, Warnings: warnings}, opts, nil
}

// urlSecretPlaceholder has the shape of a URL secret.
var urlSecretPlaceholder = tenancy.URLSecretPrefix + strings.Repeat("a", 52)

// urlWebhooks renders the webhooks of a url credential with its secret.
func urlWebhooks(opts artifacts.WebhookOptions, secret string) ([]byte, error) {
	opts.URLSecret = secret
	hooks, err := artifacts.Webhooks(opts)
	if err != nil {
		return nil, fmt.Errorf("webhook configuration: %w", err)
	}
	return hooks, nil
}

// webhookURL checks the webhook URL a caller gave, or picks the server's
// when this deployment answers for the call's tenant.
func (s *Server) webhookURL(c *call, field, u string) (string, error) {
	if u == "" && s.Serves != nil && !s.Serves(c.tenant.Name) {
		return "", fault.InvalidField(field, "is required: this gateway deployment does not answer for tenant %q (--tenants, --exclude-tenants), so its own webhook address would be refused; give the address of the deployment that does", c.tenant.Name)
	}
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
