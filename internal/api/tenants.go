package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
	"github.com/portcullis-dev/portcullis/internal/tenancy/artifacts"
)

// Audit actions of the tenancy routes.
const (
	actionCreate = "create"
	actionUpdate = "update"
	actionDelete = "delete"
	actionRevoke = "revoke"
	actionRotate = "rotate"
)

func (s *Server) tenantRoutes() []route {
	return []route{
		{method: "GET", path: "/api/v1/tenants", summary: "List tenants (a tenant's token sees only its own)",
			access: authenticated, query: pagingParams, response: apiv1.List[apiv1.Tenant]{}, handle: s.listTenants},
		{method: "POST", path: "/api/v1/tenants", summary: "Create a tenant", access: operatorOnly,
			request: apiv1.TenantCreate{}, response: apiv1.Tenant{}, status: http.StatusCreated, handle: s.createTenant},
		{method: "GET", path: "/api/v1/tenants/{tenant}", summary: "Get a tenant", access: tenantViewer,
			response: apiv1.Tenant{}, handle: s.getTenant},
		{method: "DELETE", path: "/api/v1/tenants/{tenant}",
			summary: "Delete a tenant with its clusters, credentials, policies and tokens", access: operatorOnly,
			status: http.StatusNoContent, handle: s.deleteTenant},
	}
}

func (s *Server) clusterRoutes() []route {
	const cluster = "/api/v1/tenants/{tenant}/clusters/{cluster}"
	return []route{
		{method: "GET", path: "/api/v1/tenants/{tenant}/clusters", summary: "List the tenant's clusters",
			access:   tenantViewer,
			query:    append([]param{{"labelSelector", "a Kubernetes label selector, e.g. env=prod,tier!=edge"}}, pagingParams...),
			response: apiv1.List[apiv1.Cluster]{}, handle: s.listClusters},
		{method: "POST", path: "/api/v1/tenants/{tenant}/clusters",
			summary: "Create a cluster, and with `credential` set its first credential and artifacts",
			access:  tenantAdmin, request: apiv1.ClusterCreate{}, response: apiv1.ClusterCreated{},
			status: http.StatusCreated, handle: s.createCluster},
		{method: "GET", path: cluster, summary: "Get a cluster", access: tenantViewer,
			response: apiv1.Cluster{}, handle: s.getCluster},
		{method: "PATCH", path: cluster, summary: "Replace a cluster's labels", access: tenantAdmin,
			request: apiv1.ClusterUpdate{}, response: apiv1.Cluster{}, handle: s.updateCluster},
		{method: "DELETE", path: cluster, summary: "Delete a cluster and its credentials", access: tenantAdmin,
			status: http.StatusNoContent, handle: s.deleteCluster},
		{method: "GET", path: cluster + "/artifacts",
			summary:  "The cluster's AdmissionConfiguration and webhook configuration (the kubeconfig comes with a credential)",
			access:   tenantViewer,
			query:    []param{{"webhookURL", "the gateway's webhook address as the cluster reaches it; the server's default when empty"}},
			response: apiv1.Artifacts{}, handle: s.getArtifacts},
		{method: "GET", path: cluster + "/credentials", summary: "List the cluster's credentials, revoked and expired ones too unless activeOnly",
			access: tenantViewer,
			query:  append([]param{{apiv1.QueryActiveOnly, "true: only credentials that are neither revoked nor expired"}}, pagingParams...), response: apiv1.List[apiv1.Credential]{}, handle: s.listCredentials},
		{method: "POST", path: cluster + "/credentials", summary: "Issue a credential; the secret is in this answer only",
			access: tenantAdmin, request: apiv1.CredentialCreate{}, response: apiv1.CredentialIssued{},
			status: http.StatusCreated, handle: s.createCredential},
		{method: "DELETE", path: cluster + "/credentials/{id}", summary: "Revoke a credential", access: tenantAdmin,
			response: apiv1.Credential{}, handle: s.revokeCredential},
		{method: "POST", path: cluster + "/credentials/{id}/rotate",
			summary: "Issue a new credential of the same type; the old one expires after the grace period",
			access:  tenantAdmin, request: apiv1.CredentialRotate{}, response: apiv1.CredentialIssued{},
			status: http.StatusCreated, handle: s.rotateCredential},
	}
}

// ---- wire types ----

func toTenant(t tenancy.Tenant) apiv1.Tenant {
	return apiv1.Tenant{Name: t.Name, DisplayName: t.DisplayName, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

func toCluster(tenant string, c tenancy.Cluster) apiv1.Cluster {
	out := apiv1.Cluster{Name: c.Name, Tenant: tenant, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
	if len(c.Labels) > 0 {
		out.Labels = c.Labels
	}
	return out
}

func toCredential(c tenancy.Credential, now time.Time) apiv1.Credential {
	return apiv1.Credential{
		ID: c.ID, Type: string(c.Type), Description: c.Description, Username: c.Username,
		Fingerprint: c.Fingerprint, CertificatePEM: string(c.CertificatePEM), Active: c.Active(now),
		CreatedAt: c.CreatedAt, ExpiresAt: c.ExpiresAt, RevokedAt: c.RevokedAt, LastUsedAt: c.LastUsedAt,
	}
}

// ---- validation ----

// validName checks a tenant or cluster name, naming the field.
func validName(field, name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fault.InvalidField(field, "%q is not a valid name: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

func validLabels(field string, m map[string]string) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fault.InvalidField(field, "label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(m[k]); len(errs) > 0 {
			return fault.InvalidField(field, "label %q: value %q: %s", k, m[k], strings.Join(errs, "; "))
		}
	}
	return nil
}

// duration parses a Go duration field.
func duration(field, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fault.InvalidField(field, "%q is not a Go duration such as 720h or 30m", s)
	}
	return d, nil
}

// expiresIn turns an optional positive duration into an instant.
func expiresIn(field, s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	d, err := duration(field, s)
	if err != nil {
		return nil, err
	}
	if d <= 0 {
		return nil, fault.InvalidField(field, "must be positive, not %q", s)
	}
	at := time.Now().Add(d)
	return &at, nil
}

// sortKey makes ids sort as strings in numeric order, for page.
func sortKey(id int64) string { return fmt.Sprintf("%020d", id) }

// ---- tenants ----

func (s *Server) listTenants(c *call) error {
	var ts []tenancy.Tenant
	if c.principal.Operator() {
		var err error
		if ts, err = s.Tenancy.ListAllTenants(c.ctx()); err != nil {
			return err
		}
	} else {
		t, err := s.Tenancy.FindTenant(c.ctx(), c.principal.TenantID)
		if err != nil {
			return err
		}
		ts = []tenancy.Tenant{t}
	}
	out := make([]apiv1.Tenant, len(ts))
	for i, t := range ts {
		out[i] = toTenant(t)
	}
	// page needs Go's byte order; the database's collation may differ.
	slices.SortFunc(out, func(x, y apiv1.Tenant) int { return strings.Compare(x.Name, y.Name) })
	l, err := page(c, out, func(t apiv1.Tenant) string { return t.Name })
	if err != nil {
		return err
	}
	return c.json(l)
}

func (s *Server) createTenant(c *call) error {
	var in apiv1.TenantCreate
	if err := c.decode(&in); err != nil {
		return err
	}
	if err := validName("name", in.Name); err != nil {
		return err
	}
	t, err := s.Tenancy.CreateTenant(c.ctx(), in.Name, in.DisplayName)
	if err != nil {
		return err
	}
	c.tenant = t
	c.audit(auditlog.Entry{Action: actionCreate, Kind: "Tenant", Name: t.Name})
	return c.json(toTenant(t))
}

func (s *Server) getTenant(c *call) error { return c.json(toTenant(c.tenant)) }

func (s *Server) deleteTenant(c *call) error {
	t := c.tenant
	if err := s.Tenancy.DeleteTenant(c.ctx(), t.ID); err != nil {
		if tenancy.ErrorCode(err) == tenancy.CodeNotFound {
			return tenantNotFound(t.Name)
		}
		return err
	}
	c.audit(auditlog.Entry{Action: actionDelete, Kind: "Tenant", Name: t.Name})
	return c.noContent()
}

// ---- clusters ----

// cluster resolves {cluster} in the caller's tenant.
func (s *Server) cluster(c *call) (tenancy.Cluster, error) {
	name := c.r.PathValue("cluster")
	cl, err := s.Tenancy.FindClusterByName(c.ctx(), c.tenant.ID, name)
	if tenancy.ErrorCode(err) == tenancy.CodeNotFound {
		return tenancy.Cluster{}, clusterNotFound(c.tenant.Name, name)
	}
	return cl, err
}

func clusterNotFound(tenant, name string) *fault.Error {
	return fault.Errorf(fault.NotFound, "cluster %q not found in tenant %q", name, tenant)
}

func (s *Server) listClusters(c *call) error {
	sel := labels.Everything()
	if raw := c.query("labelSelector"); raw != "" {
		var err error
		if sel, err = labels.Parse(raw); err != nil {
			return fault.InvalidField("labelSelector", "%v", err)
		}
	}
	cs, err := s.Tenancy.ListClusters(c.ctx(), c.tenant.ID)
	if err != nil {
		return err
	}
	out := []apiv1.Cluster{}
	for _, cl := range cs {
		if sel.Matches(labels.Set(cl.Labels)) {
			out = append(out, toCluster(c.tenant.Name, cl))
		}
	}
	slices.SortFunc(out, func(x, y apiv1.Cluster) int { return strings.Compare(x.Name, y.Name) })
	l, err := page(c, out, func(cl apiv1.Cluster) string { return cl.Name })
	if err != nil {
		return err
	}
	return c.json(l)
}

func (s *Server) createCluster(c *call) error {
	var in apiv1.ClusterCreate
	if err := c.decode(&in); err != nil {
		return err
	}
	if err := validName("name", in.Name); err != nil {
		return err
	}
	if err := validLabels("labels", in.Labels); err != nil {
		return err
	}
	// The credential's options are checked before the cluster exists, so
	// that a bad one leaves nothing behind.
	var req credentialRequest
	if in.Credential != nil {
		var err error
		if req, err = s.credentialRequest(c.tenant.Name, "credential.", *in.Credential); err != nil {
			return err
		}
	}
	cl, err := s.Tenancy.CreateCluster(c.ctx(), c.tenant.ID, in.Name, in.Labels)
	if err != nil {
		return err
	}
	out := apiv1.ClusterCreated{Cluster: toCluster(c.tenant.Name, cl)}
	if in.Credential != nil {
		issued, err := s.issue(c, cl, req)
		if err != nil {
			// The caller asked for a cluster with a credential; a cluster
			// without one would be a half-done create.
			// Not c.ctx(): a client that went away must not leave the
			// cluster behind.
			if derr := s.Tenancy.DeleteCluster(context.WithoutCancel(c.ctx()), c.tenant.ID, cl.ID); derr != nil {
				s.Logger.Error("removing a cluster whose first credential failed", "error", derr,
					"tenant", c.tenant.Name, "cluster", cl.Name)
			}
			return err
		}
		out.Credential = &issued
	}
	c.audit(auditlog.Entry{Action: actionCreate, Kind: "Cluster", Name: cl.Name, Detail: labelsDetail(cl.Labels)})
	if out.Credential != nil {
		c.audit(credentialEntry(actionCreate, cl.Name, out.Credential.Credential))
	}
	return c.json(out)
}

func labelsDetail(l map[string]string) map[string]any {
	return map[string]any{"labels": l}
}

func (s *Server) getCluster(c *call) error {
	cl, err := s.cluster(c)
	if err != nil {
		return err
	}
	return c.json(toCluster(c.tenant.Name, cl))
}

func (s *Server) updateCluster(c *call) error {
	cl, err := s.cluster(c)
	if err != nil {
		return err
	}
	var in apiv1.ClusterUpdate
	if err := c.decode(&in); err != nil {
		return err
	}
	// An absent field is refused rather than read as "no labels": a PATCH
	// that says nothing must not wipe them.
	if in.Labels == nil {
		return fault.InvalidField("labels", "is required; {} removes every label")
	}
	if err := validLabels("labels", in.Labels); err != nil {
		return err
	}
	updated, err := s.Tenancy.SetClusterLabels(c.ctx(), c.tenant.ID, cl.ID, in.Labels)
	if tenancy.ErrorCode(err) == tenancy.CodeNotFound {
		return clusterNotFound(c.tenant.Name, cl.Name)
	}
	if err != nil {
		return err
	}
	c.audit(auditlog.Entry{Action: actionUpdate, Kind: "Cluster", Name: cl.Name,
		Detail: map[string]any{"labelsBefore": cl.Labels, "labels": updated.Labels}})
	return c.json(toCluster(c.tenant.Name, updated))
}

func (s *Server) deleteCluster(c *call) error {
	cl, err := s.cluster(c)
	if err != nil {
		return err
	}
	err = s.Tenancy.DeleteCluster(c.ctx(), c.tenant.ID, cl.ID)
	if tenancy.ErrorCode(err) == tenancy.CodeNotFound {
		return clusterNotFound(c.tenant.Name, cl.Name)
	}
	if err != nil {
		return err
	}
	c.audit(auditlog.Entry{Action: actionDelete, Kind: "Cluster", Name: cl.Name})
	return c.noContent()
}

// ---- credentials ----

func credentialEntry(action, cluster string, cr apiv1.Credential) auditlog.Entry {
	return auditlog.Entry{Action: action, Kind: "Credential", Name: cluster,
		Detail: map[string]any{"id": cr.ID, "type": cr.Type}}
}

// credential resolves {cluster} and {id}: a credential of another cluster,
// or of another tenant, is as absent as one that never existed.
func (s *Server) credential(c *call) (tenancy.Cluster, tenancy.Credential, error) {
	cl, err := s.cluster(c)
	if err != nil {
		return cl, tenancy.Credential{}, err
	}
	raw := c.r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return cl, tenancy.Credential{}, fault.InvalidField("id", "must be a credential id as the credential list shows it, not %q", raw)
	}
	missing := fault.Errorf(fault.NotFound, "credential %d not found in cluster %q", id, cl.Name)
	cr, err := s.Tenancy.FindCredential(c.ctx(), c.tenant.ID, id)
	if tenancy.ErrorCode(err) == tenancy.CodeNotFound {
		return cl, cr, missing
	}
	if err != nil {
		return cl, cr, err
	}
	if cr.ClusterID != cl.ID {
		return cl, cr, missing
	}
	return cl, cr, nil
}

func (s *Server) listCredentials(c *call) error {
	cl, err := s.cluster(c)
	if err != nil {
		return err
	}
	activeOnly, err := c.queryBool(apiv1.QueryActiveOnly)
	if err != nil {
		return err
	}
	crs, err := s.Tenancy.ListCredentials(c.ctx(), c.tenant.ID, cl.ID)
	if tenancy.ErrorCode(err) == tenancy.CodeNotFound {
		return clusterNotFound(c.tenant.Name, cl.Name)
	}
	if err != nil {
		return err
	}
	now := time.Now()
	out := []apiv1.Credential{}
	for _, cr := range crs {
		if !activeOnly || cr.Active(now) {
			out = append(out, toCredential(cr, now))
		}
	}
	l, err := page(c, out, func(cr apiv1.Credential) string { return sortKey(cr.ID) })
	if err != nil {
		return err
	}
	return c.json(l)
}

// credentialRequest is a checked CredentialCreate.
type credentialRequest struct {
	typ        tenancy.CredentialType
	opts       tenancy.CredentialOptions
	csr        []byte
	webhookURL string
	// artifacts are rendered before the credential is issued: once it is,
	// nothing may fail, or its secret would be lost.
	artifacts apiv1.Artifacts
}

// credentialRequest checks in; prefix is prepended to field names (for a
// credential nested in another request).
func (s *Server) credentialRequest(tenant, prefix string, in apiv1.CredentialCreate) (credentialRequest, error) {
	req := credentialRequest{typ: tenancy.CredentialType(in.Type), opts: tenancy.CredentialOptions{Description: in.Description}}
	if req.typ == "" {
		req.typ = tenancy.CredentialToken
	}
	if !req.typ.Valid() {
		return req, fault.InvalidField(prefix+"type", "must be %s, %s or %s, not %q",
			apiv1.AuthToken, apiv1.AuthCertificate, apiv1.AuthBasic, in.Type)
	}
	if req.typ == tenancy.CredentialCertificate && !s.Tenancy.IssuesCertificates() {
		return req, fault.InvalidField(prefix+"type", "this gateway has no client CA, so it cannot issue certificates")
	}
	if in.CSR != "" {
		if req.typ != tenancy.CredentialCertificate {
			return req, fault.InvalidField(prefix+"csr", "is only for credentials of type %s", apiv1.AuthCertificate)
		}
		req.csr = []byte(in.CSR)
		if err := tenancy.CheckCSR(req.csr); err != nil {
			msg := "is not a valid certificate signing request"
			if te := (*tenancy.Error)(nil); errors.As(err, &te) {
				msg = te.Message
			}
			return req, fault.InvalidField(prefix+"csr", "%s", msg)
		}
	}
	var err error
	if req.opts.ExpiresAt, err = expiresIn(prefix+"expiresIn", in.ExpiresIn); err != nil {
		return req, err
	}
	if req.webhookURL, err = s.webhookURL(prefix+"webhookURL", in.WebhookURL); err != nil {
		return req, err
	}
	req.artifacts, err = s.artifacts(tenant, req.webhookURL)
	return req, err
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

// issue creates the credential req describes for cl, with its artifacts.
func (s *Server) issue(c *call, cl tenancy.Cluster, req credentialRequest) (apiv1.CredentialIssued, error) {
	var (
		in  tenancy.Issued
		err error
	)
	switch {
	case req.typ == tenancy.CredentialToken:
		in, err = s.Tenancy.CreateToken(c.ctx(), c.tenant.ID, cl.ID, req.opts)
	case req.typ == tenancy.CredentialBasic:
		in, err = s.Tenancy.CreateBasic(c.ctx(), c.tenant.ID, cl.ID, req.opts)
	case req.csr != nil:
		in, err = s.Tenancy.SignCSR(c.ctx(), c.tenant.ID, cl.ID, req.csr, req.opts)
	default:
		in, err = s.Tenancy.IssueCertificate(c.ctx(), c.tenant.ID, cl.ID, req.opts)
	}
	if tenancy.ErrorCode(err) == tenancy.CodeNotFound {
		return apiv1.CredentialIssued{}, clusterNotFound(c.tenant.Name, cl.Name)
	}
	if err != nil {
		return apiv1.CredentialIssued{}, err
	}
	return issued(in, req.artifacts, req.webhookURL), nil
}

// issued is the answer for a new credential: the secret and the artifacts
// a, completed with the kubeconfig. webhookURL has been checked, so the
// kubeconfig cannot fail to render.
func issued(in tenancy.Issued, a apiv1.Artifacts, webhookURL string) apiv1.CredentialIssued {
	out := apiv1.CredentialIssued{
		Credential: toCredential(in.Credential, time.Now()),
		Token:      in.Token, Username: in.Username, Password: in.Password,
		CertificatePEM: string(in.CertificatePEM), KeyPEM: string(in.KeyPEM),
	}
	creds := artifacts.Credentials{Token: in.Token}
	if in.Password != "" {
		creds.Username, creds.Password = in.Username, in.Password
	}
	if len(in.KeyPEM) > 0 {
		creds.ClientCertificatePEM, creds.ClientKeyPEM = in.CertificatePEM, in.KeyPEM
	}
	// A certificate signed from a CSR has no key here, so no kubeconfig.
	if in.Type != tenancy.CredentialCertificate || len(in.KeyPEM) > 0 {
		// The error is impossible here: one well-formed credential and a
		// checked URL.
		kc, _ := artifacts.Kubeconfig(creds, webhookURL)
		a.Kubeconfig = string(kc)
	}
	out.Artifacts = a
	return out
}

// artifacts renders what every cluster of the tenant installs, whatever its
// credential. webhookURL has been checked.
func (s *Server) artifacts(tenant, webhookURL string) (apiv1.Artifacts, error) {
	ac, err := artifacts.AdmissionConfiguration(apiv1.KubeconfigPath)
	if err != nil {
		return apiv1.Artifacts{}, err
	}
	vwc, err := artifacts.ValidatingWebhookConfiguration(artifacts.WebhookOptions{
		GatewayURL: webhookURL, Tenant: tenant, CABundle: s.CABundle})
	if err != nil {
		return apiv1.Artifacts{}, fmt.Errorf("webhook configuration: %w", err)
	}
	hooks, err := artifacts.YAML(vwc)
	if err != nil {
		return apiv1.Artifacts{}, err
	}
	return apiv1.Artifacts{AdmissionConfiguration: string(ac), Webhooks: string(hooks)}, nil
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

func (s *Server) createCredential(c *call) error {
	cl, err := s.cluster(c)
	if err != nil {
		return err
	}
	var in apiv1.CredentialCreate
	if err := c.decode(&in); err != nil {
		return err
	}
	req, err := s.credentialRequest(c.tenant.Name, "", in)
	if err != nil {
		return err
	}
	out, err := s.issue(c, cl, req)
	if err != nil {
		return err
	}
	c.audit(credentialEntry(actionCreate, cl.Name, out.Credential))
	return c.json(out)
}

func (s *Server) revokeCredential(c *call) error {
	cl, cr, err := s.credential(c)
	if err != nil {
		return err
	}
	revoked, err := s.Tenancy.RevokeCredential(c.ctx(), c.tenant.ID, cr.ID)
	if tenancy.ErrorCode(err) == tenancy.CodeNotFound {
		return fault.Errorf(fault.NotFound, "credential %d not found in cluster %q", cr.ID, cl.Name)
	}
	if err != nil {
		return err
	}
	out := toCredential(revoked, time.Now())
	c.audit(credentialEntry(actionRevoke, cl.Name, out))
	return c.json(out)
}

// DefaultRotationGrace is how long a rotated credential keeps working when
// the caller does not say.
const DefaultRotationGrace = 24 * time.Hour

func (s *Server) rotateCredential(c *call) error {
	cl, old, err := s.credential(c)
	if err != nil {
		return err
	}
	var in apiv1.CredentialRotate
	if err := c.decode(&in); err != nil {
		return err
	}
	grace := DefaultRotationGrace
	if in.Grace != "" {
		if grace, err = duration("grace", in.Grace); err != nil {
			return err
		}
		if grace < 0 {
			return fault.InvalidField("grace", "must not be negative; 0s revokes the old credential at once")
		}
	}
	exp, err := expiresIn("expiresIn", in.ExpiresIn)
	if err != nil {
		return err
	}
	u, err := s.webhookURL("webhookURL", in.WebhookURL)
	if err != nil {
		return err
	}
	a, err := s.artifacts(c.tenant.Name, u)
	if err != nil {
		return err
	}
	if old.RevokedAt != nil {
		return fault.Errorf(fault.Conflict, "credential %d is revoked; create a new credential instead", old.ID)
	}
	in2, oldNow, err := s.Tenancy.RotateCredential(c.ctx(), c.tenant.ID, old.ID, grace,
		tenancy.CredentialOptions{ExpiresAt: exp})
	if tenancy.ErrorCode(err) == tenancy.CodeNotFound {
		return fault.Errorf(fault.NotFound, "credential %d not found in cluster %q", old.ID, cl.Name)
	}
	if err != nil {
		return err
	}
	out := issued(in2, a, u)
	e := credentialEntry(actionRotate, cl.Name, out.Credential)
	e.Detail["replaces"] = old.ID
	e.Detail["grace"] = grace.String()
	if oldNow.ExpiresAt != nil {
		e.Detail["replacedExpiresAt"] = oldNow.ExpiresAt.UTC().Format(time.RFC3339)
	}
	c.audit(e)
	return c.json(out)
}
