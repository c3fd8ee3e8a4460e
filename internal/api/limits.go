package api

import (
	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/limits"
)

const limitsPath = "/api/v1/tenants/{tenant}/limits"

func (s *Server) limitRoutes() []route {
	return []route{
		{method: "GET", path: limitsPath, access: tenantViewer,
			summary:  "The tenant's evaluation limits and per-cluster inventory bounds: the gateway's defaults, the tenant's overrides and the result",
			response: apiv1.TenantLimits{}, handle: s.getLimits},
		{method: "PUT", path: limitsPath, access: operatorOnly,
			summary: "Set the tenant's overrides of the evaluation limits and inventory bounds (an absent or zero field takes the default)",
			request: apiv1.Limits{}, response: apiv1.TenantLimits{}, handle: s.putLimits},
	}
}

func toLimits(l limits.Limits) apiv1.Limits {
	return apiv1.Limits{ConcurrentEvaluations: l.ConcurrentEvaluations, CELCostPerRequest: l.CELCostPerRequest,
		RequestsPerSecond: l.RequestsPerSecond, MaxNamespacesPerCluster: l.MaxNamespacesPerCluster,
		MaxCRDsPerCluster: l.MaxCRDsPerCluster}
}

func fromLimits(l apiv1.Limits) limits.Limits {
	return limits.Limits{ConcurrentEvaluations: l.ConcurrentEvaluations, CELCostPerRequest: l.CELCostPerRequest,
		RequestsPerSecond: l.RequestsPerSecond, MaxNamespacesPerCluster: l.MaxNamespacesPerCluster,
		MaxCRDsPerCluster: l.MaxCRDsPerCluster}
}

// limitDefaults are the gateway's defaults. The inventory bounds are the
// ones the inventory enforces (--max-namespaces-per-cluster,
// --max-crds-per-cluster), so what is shown cannot drift from them.
func (s *Server) limitDefaults() limits.Limits {
	d := s.LimitDefaults
	b := s.Inventory.DefaultBounds()
	d.MaxNamespacesPerCluster, d.MaxCRDsPerCluster = b.Namespaces, b.CRDs
	return d
}

func (s *Server) tenantLimits(c *call) (apiv1.TenantLimits, error) {
	o, err := s.Limits.Get(c.ctx(), c.tenant.ID)
	if err != nil {
		return apiv1.TenantLimits{}, err
	}
	d := s.limitDefaults()
	return apiv1.TenantLimits{Tenant: c.tenant.Name, Defaults: toLimits(d), Overrides: toLimits(o),
		Effective: toLimits(d.Over(o))}, nil
}

func (s *Server) getLimits(c *call) error {
	out, err := s.tenantLimits(c)
	if err != nil {
		return err
	}
	return c.json(out)
}

func (s *Server) putLimits(c *call) error {
	var in apiv1.Limits
	if err := c.decode(&in); err != nil {
		return err
	}
	o := fromLimits(in)
	// Before anything is read: a value out of its range is a 422 naming
	// the field, whatever the store would make of it.
	if err := limits.Check(o); err != nil {
		return err
	}
	before, err := s.Limits.Get(c.ctx(), c.tenant.ID)
	if err != nil {
		return err
	}
	if err := s.Limits.Set(c.ctx(), c.tenant.ID, o); err != nil {
		return err
	}
	c.audit(auditlog.Entry{Action: actionUpdate, Kind: "TenantLimits", Name: c.tenant.Name,
		Detail: map[string]any{"overrides": toLimits(o), "overridesBefore": toLimits(before)}})
	out, err := s.tenantLimits(c)
	if err != nil {
		return err
	}
	return c.json(out)
}
