package ui

import (
	"net/url"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// tenantRow is one line of the Tenants page.
type tenantRow struct {
	tenant
	Clusters, Policies int
	Decisions, Denials int64
}

// tenantsPage is the Tenants page. Counted says the decision counts are
// there: counting reads a day of each tenant's decisions, so the page
// comes without them and htmx asks again with ?counts=1.
type tenantsPage struct {
	Rows    []tenantRow
	Counted bool
}

func (s *Server) tenants(r *request) error {
	if !r.sess.who.Operator() {
		return forbidden("the tenant list is for operators; your token belongs to tenant " + r.sess.who.Tenant)
	}
	var ts list[tenant]
	if err := r.api("GET", p("tenants"), url.Values{"limit": {"1000"}}, nil, &ts); err != nil {
		return err
	}
	counted := r.r.URL.Query().Get("counts") == "1"
	rows := make([]tenantRow, len(ts.Items))
	for i, t := range ts.Items {
		rows[i].tenant = t
		var cs list[apiv1.Cluster]
		if err := r.api("GET", p("tenants", t.Name, "clusters"), url.Values{"limit": {"1000"}}, nil, &cs); err != nil {
			return err
		}
		rows[i].Clusters = len(cs.Items)
		var ps list[object]
		if err := r.api("GET", p("tenants", t.Name, "objects"), url.Values{"type": {"policies"}, "limit": {"1000"}}, nil, &ps); err != nil {
			return err
		}
		rows[i].Policies = len(ps.Items)
		if !counted {
			continue
		}
		var st apiv1.DecisionStats
		if err := r.api("GET", p("tenants", t.Name, "decisions", "stats"), url.Values{"since": {"24h"}, "bucket": {"24h"}}, nil, &st); err != nil {
			return err
		}
		rows[i].Decisions, rows[i].Denials, _ = totals(st)
	}
	return r.page("tenants", r.view("Tenants", "tenants", tenantsPage{Rows: rows, Counted: counted}))
}

func (s *Server) createTenant(r *request) error {
	in := apiv1.TenantCreate{Name: r.r.PostFormValue("name"), DisplayName: r.r.PostFormValue("displayName")}
	var out apiv1.Tenant
	if err := r.api("POST", p("tenants"), nil, in, &out); err != nil {
		return err
	}
	return r.redirect("/ui/tenants", "Tenant "+out.Name+" created.")
}
