package api

import (
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/fault"
)

var decisionWindow = []param{
	{"since", "decisions at or after this time: RFC 3339, or a Go duration meaning that long ago (1h)"},
	{"until", "decisions before this time: RFC 3339, or a Go duration meaning that long ago"},
	{"cluster", "only this cluster's decisions"},
}

var decisionListParams = append(append([]param{}, decisionWindow...),
	param{"verdict", "allowed, denied, warned, error or rejected"},
	param{"policy", "decisions in which a binding of this policy matched"},
	param{"namespace", "the request's namespace"},
	param{"kind", "the object's kind (Pod)"},
	param{"user", "the requesting user's name"},
	param{"operation", "the request's operation (CREATE, UPDATE, DELETE, CONNECT)"},
	param{"resource", "the request's resource (pods)"},
	param{apiv1.QueryLimit, "page size (default 50, at most 500)"},
	param{apiv1.QueryContinue, "the cursor returned as `continue` by the previous page"},
)

var decisionStatsParams = append(append([]param{}, decisionWindow...),
	param{"bucket", "bucket size, a whole number of minutes as a Go duration (1m, 1h, 24h); default 1h"},
)

func (s *Server) decisionRoutes() []route {
	return []route{
		{method: "GET", path: "/api/v1/tenants/{tenant}/decisions", summary: "The tenant's admission decisions, newest first",
			access: tenantViewer, query: decisionListParams, response: apiv1.DecisionList{}, handle: s.listDecisions},
		{method: "GET", path: "/api/v1/tenants/{tenant}/decisions/stats",
			summary: "Counts of the tenant's decisions by verdict, denying policy and cluster, in time buckets",
			access:  tenantViewer, query: decisionStatsParams, response: apiv1.DecisionStats{}, handle: s.decisionStats},
		{method: "GET", path: "/api/v1/decisions", summary: "Every tenant's admission decisions, newest first",
			access: operatorOnly, query: append([]param{fleetTenantParam}, decisionListParams...),
			response: apiv1.DecisionList{}, handle: s.listDecisions},
		{method: "GET", path: "/api/v1/decisions/stats",
			summary: "Counts of every tenant's decisions in time buckets, summed, and of each tenant's in the window",
			access:  operatorOnly, query: append([]param{fleetTenantParam}, decisionStatsParams...),
			response: apiv1.FleetDecisionStats{}, handle: s.decisionStats},
	}
}

var fleetTenantParam = param{"tenant", "only this tenant's decisions (by name)"}

func (s *Server) listDecisions(c *call) error {
	return s.searching(c, func() error { return s.listDecisionsIn(c) })
}

func (s *Server) listDecisionsIn(c *call) error {
	f := decisions.Filter{
		Verdict: c.query("verdict"), Cluster: c.query("cluster"), Policy: c.query("policy"),
		Namespace: c.query("namespace"), Kind: c.query("kind"), User: c.query("user"),
		Operation: c.query("operation"), Resource: c.query("resource"),
		Cursor: c.query(apiv1.QueryContinue),
	}
	var err error
	if f.Since, f.Until, err = decisionTimes(c); err != nil {
		return err
	}
	limit, err := c.queryInt(apiv1.QueryLimit, 0)
	if err != nil {
		return err
	}
	f.Limit = int(limit)
	var page decisions.Page
	if c.tenant.ID == 0 { // the fleet-wide route
		page, err = s.Decisions.ListAll(c.ctx(), c.query("tenant"), f)
	} else {
		page, err = s.Decisions.List(c.ctx(), c.tenant.ID, f)
	}
	if err != nil {
		return err
	}
	return c.json(decisionList(page))
}

func (s *Server) decisionStats(c *call) error {
	return s.searching(c, func() error { return s.decisionStatsIn(c) })
}

func (s *Server) decisionStatsIn(c *call) error {
	q := decisions.StatsQuery{Cluster: c.query("cluster")}
	var err error
	if q.Since, q.Until, err = decisionTimes(c); err != nil {
		return err
	}
	if b := c.query("bucket"); b != "" {
		if q.Bucket, err = time.ParseDuration(b); err != nil {
			return fault.InvalidField("bucket", "must be a Go duration (1m, 1h, 24h), not %q", b)
		}
	}
	if c.tenant.ID == 0 { // the fleet-wide route
		stats, tenants, err := s.Decisions.StatsAll(c.ctx(), c.query("tenant"), q)
		if err != nil {
			return err
		}
		return c.json(fleetStatsOut(stats, tenants))
	}
	stats, err := s.Decisions.Stats(c.ctx(), c.tenant.ID, q)
	if err != nil {
		return err
	}
	return c.json(decisionStatsOut(stats))
}

func decisionTimes(c *call) (since, until time.Time, err error) {
	if since, err = queryTime(c, "since"); err != nil {
		return
	}
	until, err = queryTime(c, "until")
	return
}
