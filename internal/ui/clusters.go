package ui

import (
	"net/url"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// clusterRow is one cluster of the Clusters page.
type clusterRow struct {
	apiv1.Cluster
	Credentials       []apiv1.Credential
	Requests, Denials int64
	LastRequest       *apiv1.Decision
}

// clustersPage is the Clusters page; like the Tenants page, its decision
// counts come with ?counts=1, which htmx asks for after the page.
type clustersPage struct {
	Rows    []clusterRow
	Counted bool
}

func (s *Server) clusters(r *request) error {
	counted := r.r.URL.Query().Get("counts") == "1"
	t := r.tenant()
	var cs list[apiv1.Cluster]
	if err := r.api("GET", p("tenants", t, "clusters"), url.Values{"limit": {"1000"}}, nil, &cs); err != nil {
		return err
	}
	rows := make([]clusterRow, len(cs.Items))
	for i, c := range cs.Items {
		rows[i].Cluster = c
		var creds list[apiv1.Credential]
		if err := r.api("GET", p("tenants", t, "clusters", c.Name, "credentials"), nil, nil, &creds); err != nil {
			return err
		}
		rows[i].Credentials = creds.Items
		if !counted {
			continue
		}
		var st apiv1.DecisionStats
		if err := r.api("GET", p("tenants", t, "decisions", "stats"),
			url.Values{"since": {"24h"}, "bucket": {"24h"}, "cluster": {c.Name}}, nil, &st); err != nil {
			return err
		}
		rows[i].Requests, rows[i].Denials, _ = totals(st)
		var last list[apiv1.Decision]
		if err := r.api("GET", p("tenants", t, "decisions"), url.Values{"cluster": {c.Name}, "limit": {"1"}}, nil, &last); err != nil {
			return err
		}
		if len(last.Items) > 0 {
			rows[i].LastRequest = &last.Items[0]
		}
	}
	return r.page("clusters", r.view("Clusters", "clusters", clustersPage{Rows: rows, Counted: counted}))
}
