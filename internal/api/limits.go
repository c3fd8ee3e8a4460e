package api

import (
	"math"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/limits"
)

const limitsPath = "/api/v1/tenants/{tenant}/limits"

func (s *Server) limitRoutes() []route {
	return []route{
		{method: "GET", path: limitsPath, access: tenantViewer,
			summary:  "The tenant's evaluation limits: the gateway's defaults, the tenant's overrides and the result",
			response: apiv1.TenantLimits{}, handle: s.getLimits},
		{method: "PUT", path: limitsPath, access: operatorOnly,
			summary: "Set the tenant's overrides of the evaluation limits (an absent or zero field takes the default)",
			request: apiv1.Limits{}, response: apiv1.TenantLimits{}, handle: s.putLimits},
	}
}

func toLimits(l limits.Limits) apiv1.Limits {
	return apiv1.Limits{ConcurrentEvaluations: l.ConcurrentEvaluations, CELCostPerRequest: l.CELCostPerRequest,
		RequestsPerSecond: l.RequestsPerSecond}
}

func (s *Server) tenantLimits(c *call) (apiv1.TenantLimits, error) {
	o, err := s.Limits.Get(c.ctx(), c.tenant.ID)
	if err != nil {
		return apiv1.TenantLimits{}, err
	}
	return apiv1.TenantLimits{Tenant: c.tenant.Name, Defaults: toLimits(s.LimitDefaults), Overrides: toLimits(o),
		Effective: toLimits(s.LimitDefaults.Over(o))}, nil
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
	switch {
	case in.ConcurrentEvaluations < 0 || in.ConcurrentEvaluations > 10_000:
		return fault.InvalidField("concurrentEvaluations", "must be between 1 and 10000, or 0 for the default")
	case in.CELCostPerRequest < 0:
		return fault.InvalidField("celCostPerRequest", "must be positive, or 0 for the default")
	case in.RequestsPerSecond < 0 || math.IsNaN(in.RequestsPerSecond) || math.IsInf(in.RequestsPerSecond, 0):
		return fault.InvalidField("requestsPerSecond", "must be a positive number, or 0 for the default")
	}
	before, err := s.Limits.Get(c.ctx(), c.tenant.ID)
	if err != nil {
		return err
	}
	o := limits.Limits{ConcurrentEvaluations: in.ConcurrentEvaluations, CELCostPerRequest: in.CELCostPerRequest,
		RequestsPerSecond: in.RequestsPerSecond}
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
