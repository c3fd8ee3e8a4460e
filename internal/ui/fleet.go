package ui

import (
	"cmp"
	"net/url"
	"slices"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// fleetRow is one tenant's counts on the operator's fleet-wide Decisions
// page.
type fleetRow struct {
	Tenant            string
	Requests, Denials int64
	TopPolicy         string
	TopDenials        int64
}

type fleetPage struct {
	Range    string
	Ranges   []string
	Chart    chartData
	Requests int64
	Denials  int64
	Tenants  []fleetRow
	// The table of every tenant's decisions, as the tenant's page has it,
	// with "tenant" among the filters.
	decisionTable
}

// decisionsHome is the Decisions entry of the navigation: a tenant's user
// goes to the tenant's decisions; an operator gets the fleet-wide page:
// the summary (loaded by htmx) and every tenant's decisions, merged.
func (s *Server) decisionsHome(r *request) error {
	if !r.sess.who.Operator() {
		return s.pickTenant("decisions", "Decisions")(r)
	}
	var pg fleetPage
	var since string
	pg.Range, since, _, pg.Ranges = rangeOf(r)
	if err := pg.read(r, p("decisions"), append([]string{"tenant"}, decisionFilters...), pg.Range, since); err != nil {
		return err
	}
	return r.page("fleet", r.view("Decisions", "decisions", pg))
}

// fleetSummary counts every tenant's decisions of the range: the fleet's
// chart and each tenant's requests, denials and top denying policy, from
// one call. htmx loads it after the page, as the tenant's summary.
func (s *Server) fleetSummary(r *request) error {
	if !r.sess.who.Operator() {
		return forbidden("the fleet-wide decisions are for operators")
	}
	var pg fleetPage
	var since, bucket string
	pg.Range, since, bucket, pg.Ranges = rangeOf(r)
	var st apiv1.FleetDecisionStats
	if err := r.api("GET", p("decisions", "stats"), url.Values{"since": {since}, "bucket": {bucket}}, nil, &st); err != nil {
		return err
	}
	for _, b := range st.Buckets {
		pg.Chart.Time = append(pg.Chart.Time, b.Start.Unix())
		pg.Chart.Requests = append(pg.Chart.Requests, b.Total)
		pg.Chart.Denials = append(pg.Chart.Denials, b.Verdicts["denied"]+b.Verdicts["rejected"])
	}
	for _, t := range st.Tenants {
		row := fleetRow{Tenant: t.Tenant, Requests: t.Total, Denials: t.Verdicts["denied"] + t.Verdicts["rejected"]}
		for p, n := range t.DeniedBy {
			if n > row.TopDenials || n == row.TopDenials && p < row.TopPolicy {
				row.TopPolicy, row.TopDenials = p, n
			}
		}
		pg.Requests += row.Requests
		pg.Denials += row.Denials
		pg.Tenants = append(pg.Tenants, row)
	}
	slices.SortFunc(pg.Tenants, func(a, b fleetRow) int {
		return cmp.Or(cmp.Compare(b.Denials, a.Denials), cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.Tenant, b.Tenant))
	})
	v := r.view("Decisions summary", "decisions", pg)
	if r.htmx() {
		return r.fragment("fleet_summary", "summary", v)
	}
	return r.page("fleet_summary", v)
}
