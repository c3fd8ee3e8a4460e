package api

import (
	"net/http"
	"slices"
	"strings"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
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

func toTenant(t tenancy.Tenant) apiv1.Tenant {
	return apiv1.Tenant{Name: t.Name, DisplayName: t.DisplayName, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

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
		if fault.ErrorCode(err) == fault.NotFound {
			return tenantNotFound(t.Name)
		}
		return err
	}
	c.audit(auditlog.Entry{Action: actionDelete, Kind: "Tenant", Name: t.Name})
	return c.noContent()
}
