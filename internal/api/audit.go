package api

import (
	"strconv"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/fault"
)

// Audit actions of the admin routes.
const (
	actionCreate = "create"
	actionUpdate = "update"
	actionDelete = "delete"
	actionRevoke = "revoke"
	actionRotate = "rotate"
)

var auditParams = append([]param{
	{"since", "entries at or after this time: RFC 3339, or a Go duration meaning that long ago (24h)"},
	{"until", "entries before this time: RFC 3339, or a Go duration meaning that long ago"},
	{"actor", "the token that made the call, as token:ID or token:ID/ROLE (the actor field)"},
	{"actorName", "the name of the token that made the call (a label: names are not unique)"},
	{"kind", "Tenant, Cluster, Credential, Token, or a policy object's kind (case-insensitive)"},
	{"name", "the object's name (for credentials, the cluster's)"},
}, pagingParams...)

func (s *Server) auditRoutes() []route {
	return []route{
		{method: "GET", path: "/api/v1/audit", summary: "The admin audit log of the whole gateway, newest first",
			access:   operatorOnly,
			query:    append([]param{{"tenant", "only entries about this tenant (by name; deleted tenants too)"}}, auditParams...),
			response: apiv1.List[apiv1.AuditEntry]{}, handle: s.listAudit},
		{method: "GET", path: "/api/v1/tenants/{tenant}/audit", summary: "The tenant's admin audit log, newest first",
			access: tenantViewer, query: auditParams, response: apiv1.List[apiv1.AuditEntry]{}, handle: s.listAudit},
	}
}

// listAudit serves both audit routes: on the tenant's route c.tenant
// scopes it, on the gateway-wide one (c.tenant is zero) ?tenant= may.
func (s *Server) listAudit(c *call) error {
	f := auditlog.Filter{Actor: c.query("actor"), ActorName: c.query("actorName"), Kind: c.query("kind"), Name: c.query("name")}
	if c.tenant.ID == 0 {
		f.Tenant = c.query("tenant")
	}
	var err error
	if f.Since, err = queryTime(c, "since"); err != nil {
		return err
	}
	if f.Until, err = queryTime(c, "until"); err != nil {
		return err
	}
	limit, err := c.limit()
	if err != nil {
		return err
	}
	// The cursor is the id of the last entry sent; pages go back in time.
	if cur := c.query(apiv1.QueryContinue); cur != "" {
		key, err := decodeCursor(cur)
		if err != nil {
			return err
		}
		if f.Before, err = strconv.ParseInt(key, 10, 64); err != nil || f.Before <= 0 {
			return fault.InvalidField(apiv1.QueryContinue, "is not a cursor this API returned")
		}
	}
	// One more than asked tells whether another page exists.
	f.Limit = int(limit) + 1
	entries, err := s.Audit.List(c.ctx(), c.tenant.ID, f)
	if err != nil {
		return err
	}
	out := apiv1.List[apiv1.AuditEntry]{Items: []apiv1.AuditEntry{}}
	if len(entries) > int(limit) {
		entries = entries[:limit]
		out.Continue = encodeCursor(strconv.FormatInt(entries[limit-1].ID, 10))
	}
	for _, e := range entries {
		out.Items = append(out.Items, auditEntryOut(e))
	}
	return c.json(out)
}

// queryTime reads an RFC 3339 time, or a Go duration meaning that long
// before now; absent is the zero time.
func queryTime(c *call, name string) (time.Time, error) {
	v := c.query(name)
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return time.Time{}, fault.InvalidField(name, "must be an RFC 3339 time or a positive Go duration (24h), not %q", v)
	}
	return time.Now().Add(-d), nil
}
