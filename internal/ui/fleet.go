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
}

// decisionsHome is the Decisions entry of the navigation: a tenant's user
// goes to the tenant's decisions; an operator gets the fleet-wide page.
func (s *Server) decisionsHome(r *request) error {
	if !r.sess.who.Operator() {
		return s.pickTenant("decisions", "Decisions")(r)
	}
	var pg fleetPage
	pg.Range, _, _, pg.Ranges = rangeOf(r)
	return r.page("fleet", r.view("Decisions", "decisions", pg))
}

// fleetSummary counts every tenant's decisions of the range: the fleet's
// chart is the sum of the tenants' buckets. htmx loads it after the page,
// as the tenant's summary.
func (s *Server) fleetSummary(r *request) error {
	if !r.sess.who.Operator() {
		return forbidden("the fleet-wide decisions are for operators")
	}
	var pg fleetPage
	var since, bucket string
	pg.Range, since, bucket, pg.Ranges = rangeOf(r)
	var ts list[tenant]
	if err := r.api("GET", p("tenants"), url.Values{"limit": {"1000"}}, nil, &ts); err != nil {
		return err
	}
	for _, t := range ts.Items {
		var st apiv1.DecisionStats
		if err := r.api("GET", p("tenants", t.Name, "decisions", "stats"), url.Values{"since": {since}, "bucket": {bucket}}, nil, &st); err != nil {
			return err
		}
		row := fleetRow{Tenant: t.Name}
		var byPolicy map[string]int64
		row.Requests, row.Denials, byPolicy = totals(st)
		for p, n := range byPolicy {
			if n > row.TopDenials || n == row.TopDenials && p < row.TopPolicy {
				row.TopPolicy, row.TopDenials = p, n
			}
		}
		pg.Requests += row.Requests
		pg.Denials += row.Denials
		pg.Tenants = append(pg.Tenants, row)
		// Every tenant's buckets start at the same times: the window and
		// the bucket size are the same.
		if pg.Chart.Time == nil {
			for _, b := range st.Buckets {
				pg.Chart.Time = append(pg.Chart.Time, b.Start.Unix())
			}
			pg.Chart.Requests = make([]int64, len(st.Buckets))
			pg.Chart.Denials = make([]int64, len(st.Buckets))
		}
		for i, b := range st.Buckets {
			if i < len(pg.Chart.Time) {
				pg.Chart.Requests[i] += b.Total
				pg.Chart.Denials[i] += b.Verdicts["denied"] + b.Verdicts["rejected"]
			}
		}
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
