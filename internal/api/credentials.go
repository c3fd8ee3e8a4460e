package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
	"github.com/portcullis-dev/portcullis/internal/tenancy/artifacts"
)

func (s *Server) credentialRoutes() []route {
	return []route{
		{method: "GET", path: clusterPath + "/credentials", summary: "List the cluster's credentials, revoked and expired ones too unless activeOnly",
			access: tenantViewer,
			query:  append([]param{{apiv1.QueryActiveOnly, "true: only credentials that are neither revoked nor expired"}}, pagingParams...), response: apiv1.List[apiv1.Credential]{}, handle: s.listCredentials},
		{method: "POST", path: clusterPath + "/credentials", summary: "Issue a credential; the secret is in this answer only",
			access: tenantAdmin, request: apiv1.CredentialCreate{}, response: apiv1.CredentialIssued{},
			status: http.StatusCreated, handle: s.createCredential},
		{method: "DELETE", path: clusterPath + "/credentials/{id}", summary: "Revoke a credential", access: tenantAdmin,
			response: apiv1.Credential{}, handle: s.revokeCredential},
		{method: "POST", path: clusterPath + "/credentials/{id}/rotate",
			summary: "Issue a new credential of the same type; the old one expires after the grace period",
			access:  tenantAdmin, request: apiv1.CredentialRotate{}, response: apiv1.CredentialIssued{},
			status: http.StatusCreated, handle: s.rotateCredential},
	}
}

func toCredential(c tenancy.Credential, now time.Time) apiv1.Credential {
	return apiv1.Credential{
		ID: c.ID, Type: string(c.Type), Description: c.Description, Username: c.Username,
		Fingerprint: c.Fingerprint, CertificatePEM: string(c.CertificatePEM), Active: c.Active(now),
		CreatedAt: c.CreatedAt, ExpiresAt: c.ExpiresAt, RevokedAt: c.RevokedAt, LastUsedAt: c.LastUsedAt,
	}
}

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
	if fault.ErrorCode(err) == fault.NotFound {
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
	if fault.ErrorCode(err) == fault.NotFound {
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
	// nothing may fail, or its secret would be lost. hooks are the
	// options of its webhooks, for a url credential's.
	artifacts apiv1.Artifacts
	hooks     artifacts.WebhookOptions
}

// credentialRequest checks in; prefix is prepended to field names (for a
// credential nested in another request).
func (s *Server) credentialRequest(c *call, prefix string, in apiv1.CredentialCreate) (credentialRequest, error) {
	req := credentialRequest{typ: tenancy.CredentialType(in.Type), opts: tenancy.CredentialOptions{Description: in.Description}}
	if req.typ == "" {
		req.typ = tenancy.CredentialToken
	}
	if !req.typ.Valid() {
		return req, fault.InvalidField(prefix+"type", "must be %s, %s, %s or %s, not %q",
			apiv1.AuthToken, apiv1.AuthCertificate, apiv1.AuthBasic, apiv1.AuthURL, in.Type)
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
			if te := (*fault.Error)(nil); errors.As(err, &te) {
				msg = te.Message
			}
			return req, fault.InvalidField(prefix+"csr", "%s", msg)
		}
	}
	var err error
	if req.opts.ExpiresAt, err = expiresIn(prefix+"expiresIn", in.ExpiresIn); err != nil {
		return req, err
	}
	if req.webhookURL, err = s.webhookURL(c, prefix+"webhookURL", in.WebhookURL); err != nil {
		return req, err
	}
	req.artifacts, req.hooks, err = s.artifactsFor(c, req.webhookURL, req.typ)
	return req, err
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
	case req.typ == tenancy.CredentialURL:
		in, err = s.Tenancy.CreateURL(c.ctx(), c.tenant.ID, cl.ID, req.opts)
	case req.csr != nil:
		in, err = s.Tenancy.SignCSR(c.ctx(), c.tenant.ID, cl.ID, req.csr, req.opts)
	default:
		in, err = s.Tenancy.IssueCertificate(c.ctx(), c.tenant.ID, cl.ID, req.opts)
	}
	if fault.ErrorCode(err) == fault.NotFound {
		return apiv1.CredentialIssued{}, clusterNotFound(c.tenant.Name, cl.Name)
	}
	if err != nil {
		return apiv1.CredentialIssued{}, err
	}
	return s.issued(in, req.artifacts, req.webhookURL, req.hooks), nil
}

// issued is the answer for a new credential: the secret and the artifacts
// a, completed with the kubeconfig, or for a url credential with the
// webhooks that carry its secret (rendered with hooks). webhookURL has been
// checked and a rendered with it, so nothing can fail to render.
func (s *Server) issued(in tenancy.Issued, a apiv1.Artifacts, webhookURL string, hooks artifacts.WebhookOptions) apiv1.CredentialIssued {
	out := apiv1.CredentialIssued{
		Credential: toCredential(in.Credential, time.Now()),
		Token:      in.Token, Username: in.Username, Password: in.Password,
		CertificatePEM: string(in.CertificatePEM), KeyPEM: string(in.KeyPEM),
		URLSecret: in.URLSecret,
	}
	if in.Type == tenancy.CredentialURL {
		// The error is impossible: a was rendered with a placeholder of
		// the secret's shape.
		rendered, _ := urlWebhooks(hooks, in.URLSecret)
		a.Webhooks = string(rendered)
		out.Artifacts = a
		return out
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

func (s *Server) createCredential(c *call) error {
	cl, err := s.cluster(c)
	if err != nil {
		return err
	}
	var in apiv1.CredentialCreate
	if err := c.decode(&in); err != nil {
		return err
	}
	req, err := s.credentialRequest(c, "", in)
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
	if fault.ErrorCode(err) == fault.NotFound {
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
	u, err := s.webhookURL(c, "webhookURL", in.WebhookURL)
	if err != nil {
		return err
	}
	a, hooks, err := s.artifactsFor(c, u, old.Type)
	if err != nil {
		return err
	}
	if old.RevokedAt != nil {
		return fault.Errorf(fault.Conflict, "credential %d is revoked; create a new credential instead", old.ID)
	}
	in2, oldNow, err := s.Tenancy.RotateCredential(c.ctx(), c.tenant.ID, old.ID, grace,
		tenancy.CredentialOptions{ExpiresAt: exp})
	if fault.ErrorCode(err) == fault.NotFound {
		return fault.Errorf(fault.NotFound, "credential %d not found in cluster %q", old.ID, cl.Name)
	}
	if err != nil {
		return err
	}
	out := s.issued(in2, a, u, hooks)
	e := credentialEntry(actionRotate, cl.Name, out.Credential)
	e.Detail["replaces"] = old.ID
	e.Detail["grace"] = grace.String()
	if oldNow.ExpiresAt != nil {
		e.Detail["replacedExpiresAt"] = oldNow.ExpiresAt.UTC().Format(time.RFC3339)
	}
	c.audit(e)
	return c.json(out)
}
