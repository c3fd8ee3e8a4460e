package api

import (
	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// access is who may call a route. A tenant-scoped token calling a route of
// another tenant is told that tenant does not exist, exactly as for a
// tenant that does not.
type access int

const (
	public        access = iota // no token
	authenticated               // any valid token
	operatorOnly                // operator tokens
	tenantViewer                // operators, and admin and viewer tokens of {tenant}
	tenantAdmin                 // operators, and admin tokens of {tenant}
	// clusterSync is tenantAdmin, and the sync token of {tenant}'s
	// {cluster}: the only routes a sync token reaches.
	clusterSync
)

// route is one endpoint. path uses net/http wildcards; a route whose path
// has {tenant} gets the tenant resolved (and its access checked) before the
// handler runs.
type route struct {
	method, path string
	summary      string
	access       access
	// query documents the query parameters the handler reads.
	query []param
	// request and response are zero values of the wire types, for the
	// OpenAPI document; nil for none. rawBody names a non-JSON body (for
	// example multi-document YAML).
	request, response any
	rawBody           string
	// status is the success status; 200 when zero.
	status int
	handle func(*call) error
}

type param struct{ name, description string }

// joinParams is the parameters of several lists, in order.
func joinParams(ps ...[]param) []param {
	var out []param
	for _, p := range ps {
		out = append(out, p...)
	}
	return out
}

var pagingParams = []param{
	{apiv1.QueryLimit, "page size (default 100, at most 1000)"},
	{apiv1.QueryContinue, "the cursor returned as `continue` by the previous page"},
}

// routes lists every endpoint of the API. Each group of resources adds its
// own list here.
func (s *Server) routes() []route {
	var all []route
	for _, group := range [][]route{
		s.coreRoutes(),
		s.tokenRoutes(), s.tenantRoutes(), s.clusterRoutes(), s.artifactRoutes(), s.credentialRoutes(), s.auditRoutes(),
		s.policyRoutes(), s.versionRoutes(), s.namespaceRoutes(), s.namespaceSyncRoutes(), s.crdRoutes(), s.evaluateRoutes(),
		s.decisionRoutes(), s.catalogRoutes(), s.limitRoutes(),
	} {
		all = append(all, group...)
	}
	return all
}

func (s *Server) coreRoutes() []route {
	return []route{
		{method: "GET", path: "/api/v1/openapi.json", summary: "This API's OpenAPI 3.1 document", access: public,
			handle: s.openAPI},
		{method: "GET", path: "/api/v1/whoami", summary: "The caller's token: name, role and tenant", access: authenticated,
			response: apiv1.WhoAmI{}, handle: s.whoami},
	}
}

func (s *Server) whoami(c *call) error {
	p := c.principal
	return c.json(apiv1.WhoAmI{Name: p.Name, Role: string(p.Role), Tenant: p.TenantName, TokenID: p.TokenID, ExpiresAt: p.ExpiresAt})
}
