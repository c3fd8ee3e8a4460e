package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

// Token routes are open to any token and scope themselves: an operator
// reaches every token, a tenant admin those of its tenant, a viewer none.
func (s *Server) tokenRoutes() []route {
	return []route{
		{method: "GET", path: "/api/v1/tokens",
			summary: "List admin tokens: an operator sees all, a tenant admin its tenant's; viewers may not",
			access:  authenticated,
			query: append([]param{{"tenant", "only this tenant's tokens (operators)"},
				{apiv1.QueryActiveOnly, "true: only tokens that are neither revoked nor expired"}}, pagingParams...),
			response: apiv1.List[apiv1.Token]{}, handle: s.listTokens},
		{method: "POST", path: "/api/v1/tokens",
			summary: "Create an admin token; the secret is in this answer only. Tenant admins create admin and viewer tokens of their tenant",
			access:  authenticated, request: apiv1.TokenCreate{}, response: apiv1.TokenIssued{},
			status: http.StatusCreated, handle: s.createToken},
		{method: "DELETE", path: "/api/v1/tokens/{id}",
			summary:  "Revoke an admin token; the tokens it minted stay valid unless cascade is true",
			access:   authenticated,
			query:    []param{{"cascade", "true: revoke as well every token this one minted, directly or through the tokens it minted (revokedWith lists them)"}},
			response: apiv1.Token{}, handle: s.revokeToken},
	}
}

func toToken(t adminauth.Token) apiv1.Token {
	return apiv1.Token{
		ID: t.ID, Name: t.Name, Role: string(t.Role), Tenant: t.TenantName, Cluster: t.ClusterName, CreatedBy: t.CreatedBy, CreatedByID: t.CreatedByID,
		CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt, RevokedAt: t.RevokedAt, LastUsedAt: t.LastUsedAt,
	}
}

// tokenManager refuses viewers, who may not see tokens at all.
func tokenManager(c *call) error {
	p := c.principal
	if !p.Operator() && p.Role != adminauth.RoleAdmin {
		return fault.Errorf(fault.Forbidden, "managing admin tokens needs an admin or operator token; %q is a %s token", p.Name, p.Role)
	}
	return nil
}

func (s *Server) listTokens(c *call) error {
	if err := tokenManager(c); err != nil {
		return err
	}
	scope := c.principal.TenantID
	if name := c.query("tenant"); name != "" {
		t, err := s.resolveTenant(c, name)
		if err != nil {
			return err
		}
		scope = t.ID
	}
	activeOnly, err := c.queryBool(apiv1.QueryActiveOnly)
	if err != nil {
		return err
	}
	toks, err := s.Tokens.List(c.ctx(), scope)
	if err != nil {
		return err
	}
	now := time.Now()
	out := []apiv1.Token{}
	for _, t := range toks {
		if !activeOnly || (t.RevokedAt == nil && (t.ExpiresAt == nil || now.Before(*t.ExpiresAt))) {
			out = append(out, toToken(t))
		}
	}
	l, err := page(c, out, func(t apiv1.Token) string { return sortKey(t.ID) })
	if err != nil {
		return err
	}
	return c.json(l)
}

// validTokenName keeps names printable: they show up in tables and in the
// audit log as the actor.
func validTokenName(name string) error {
	switch {
	case name == "":
		return fault.InvalidField("name", "is required")
	case utf8.RuneCountInString(name) > 100:
		return fault.InvalidField("name", "must be at most 100 characters")
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return fault.InvalidField("name", "must be printable text, not %q", name)
		}
	}
	return nil
}

func (s *Server) createToken(c *call) error {
	if err := tokenManager(c); err != nil {
		return err
	}
	var in apiv1.TokenCreate
	if err := c.decode(&in); err != nil {
		return err
	}
	if err := validTokenName(in.Name); err != nil {
		return err
	}
	var tenant tenancy.Tenant
	var cluster tenancy.Cluster
	if in.Cluster != "" && in.Role != apiv1.RoleSync {
		return fault.InvalidField("cluster", "is only for a %s token", apiv1.RoleSync)
	}
	switch in.Role {
	case apiv1.RoleOperator:
		if !c.principal.Operator() {
			return fault.Errorf(fault.Forbidden, "only an operator may create an operator token")
		}
		if in.Tenant != "" {
			return fault.InvalidField("tenant", "must be empty for an operator token, which is not scoped to a tenant")
		}
	case apiv1.RoleAdmin, apiv1.RoleViewer:
		if in.Tenant == "" {
			return fault.InvalidField("tenant", "is required for a %s token", in.Role)
		}
		var err error
		if tenant, err = s.resolveTenant(c, in.Tenant); err != nil {
			return err
		}
	case apiv1.RoleSync:
		if in.Tenant == "" || in.Cluster == "" {
			return fault.InvalidField("cluster", "a %s token needs a tenant and a cluster", in.Role)
		}
		var err error
		if tenant, err = s.resolveTenant(c, in.Tenant); err != nil {
			return err
		}
		cluster, err = s.Tenancy.FindClusterByName(c.ctx(), tenant.ID, in.Cluster)
		if fault.ErrorCode(err) == fault.NotFound {
			return clusterNotFound(tenant.Name, in.Cluster)
		}
		if err != nil {
			return err
		}
	default:
		return fault.InvalidField("role", "must be %s, %s, %s or %s, not %q", apiv1.RoleOperator, apiv1.RoleAdmin, apiv1.RoleViewer, apiv1.RoleSync, in.Role)
	}
	exp, err := expiresIn("expiresIn", in.ExpiresIn)
	if err != nil {
		return err
	}
	// A tenant admin's token must not mint access that outlives it.
	if limit := c.principal.ExpiresAt; !c.principal.Operator() && limit != nil {
		switch {
		case exp == nil:
			exp = limit
		case exp.After(*limit):
			return fault.InvalidField("expiresIn", "must not go beyond %s, when the token creating it expires",
				limit.UTC().Format(time.RFC3339))
		}
	}
	var tok adminauth.Token
	var secret string
	by := adminauth.Creator{Name: c.principal.Name, TokenID: c.principal.TokenID}
	if in.Role == apiv1.RoleSync {
		tok, secret, err = s.Tokens.CreateSync(c.ctx(), tenant.ID, cluster.ID, in.Name, exp, by)
	} else {
		tok, secret, err = s.Tokens.Create(c.ctx(), tenant.ID, in.Name, adminauth.Role(in.Role), exp, by)
	}
	if err != nil {
		return err
	}
	c.tenant = tenant
	c.audit(auditlog.Entry{Action: actionCreate, Kind: "Token", Name: tok.Name,
		Detail: map[string]any{"id": tok.ID, "role": string(tok.Role)}})
	return c.json(apiv1.TokenIssued{Token: toToken(tok), Secret: secret})
}

func (s *Server) revokeToken(c *call) error {
	if err := tokenManager(c); err != nil {
		return err
	}
	raw := c.r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return fault.InvalidField("id", "must be a token id as the token list shows it, not %q", raw)
	}
	cascade, err := c.queryBool("cascade")
	if err != nil {
		return err
	}
	// Scoped in the store: a tenant admin cannot reach another tenant's
	// token, nor an operator token.
	var toks []adminauth.Token
	if cascade {
		toks, err = s.Tokens.RevokeTree(c.ctx(), c.principal.TenantID, id)
	} else {
		var tok adminauth.Token
		tok, err = s.Tokens.Revoke(c.ctx(), c.principal.TenantID, id)
		toks = []adminauth.Token{tok}
	}
	if errors.Is(err, adminauth.ErrNotFound) {
		return fault.Errorf(fault.NotFound, "admin token %d not found", id)
	}
	if err != nil {
		return err
	}
	out := toToken(toks[0])
	for _, tok := range toks {
		detail := map[string]any{"id": tok.ID, "role": string(tok.Role)}
		if tok.ID != id {
			detail["cascadeFrom"] = id
			out.RevokedWith = append(out.RevokedWith, tok.ID)
		}
		c.tenant = tenancy.Tenant{ID: tok.TenantID, Name: tok.TenantName}
		c.audit(auditlog.Entry{Action: actionRevoke, Kind: "Token", Name: tok.Name, Detail: detail})
	}
	return c.json(out)
}
