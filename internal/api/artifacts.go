package api

import (
	"fmt"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/fault"
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
	a, err := s.artifacts(c, u)
	if err != nil {
		return err
	}
	return c.json(a)
}

// artifacts renders what every cluster of the tenant installs, whatever its
// credential. webhookURL has been checked. The webhooks send status writes
// when a policy of the tenant matches them; a policy that matches another
// default exclusion gets a warning, since the webhooks never send those.
func (s *Server) artifacts(c *call, webhookURL string) (apiv1.Artifacts, error) {
	ac, err := artifacts.AdmissionConfiguration(apiv1.KubeconfigPath)
	if err != nil {
		return apiv1.Artifacts{}, err
	}
	needs, err := s.tenantNeeds(c)
	if err != nil {
		return apiv1.Artifacts{}, err
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
	// The validating and the mutating configuration, one YAML stream.
	hooks, err := artifacts.Webhooks(artifacts.WebhookOptions{
		GatewayURL: webhookURL, Tenant: c.tenant.Name, CABundle: s.CABundle, IncludeStatus: includeStatus})
	if err != nil {
		return apiv1.Artifacts{}, fmt.Errorf("webhook configuration: %w", err)
	}
	return apiv1.Artifacts{AdmissionConfiguration: string(ac), Webhooks: string(hooks), Warnings: warnings}, nil
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
