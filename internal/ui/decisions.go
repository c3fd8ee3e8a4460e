package ui

import (
	"cmp"
	"net/url"
	"slices"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// ranges are the Decisions page's time windows, each with the bucket of
// its chart (at most a few dozen points).
var ranges = []struct {
	Name   string
	Window time.Duration
	Bucket string
}{
	{"1h", time.Hour, "1m"},
	{"24h", 24 * time.Hour, "1h"},
	{"7d", 7 * 24 * time.Hour, "6h"},
	{"30d", 30 * 24 * time.Hour, "24h"},
}

// decisionFilters are the query parameters the table passes to the API.
var decisionFilters = []string{"verdict", "cluster", "namespace", "policy", "user", "operation", "resource", "kind"}

type decisionsPage struct {
	Range    string
	Ranges   []string
	Chart    chartData
	Requests int64
	Denials  int64
	Top      []policyCount
	decisionTable
}

// decisionTable is the table of decisions the tenant's page and the
// fleet's share: the filters the query sets, one page of decisions and the
// query of the next.
type decisionTable struct {
	Filter map[string]string
	Items  []apiv1.Decision
	// Next is the query of the next page, empty on the last.
	Next string
}

// read fills the table from the list of decisions at path over the range
// rng (since its start), with the filters named in keys.
func (d *decisionTable) read(r *request, path string, keys []string, rng, since string) error {
	q := r.r.URL.Query()
	d.Filter = map[string]string{}
	lq := url.Values{"since": {since}, "limit": {"50"}}
	for _, k := range keys {
		if v := q.Get(k); v != "" {
			d.Filter[k] = v
			lq.Set(k, v)
		}
	}
	if c := q.Get("continue"); c != "" {
		lq.Set("continue", c)
	}
	var l apiv1.DecisionList
	if err := r.api("GET", path, lq, nil, &l); err != nil {
		return err
	}
	d.Items = l.Items
	if l.Continue != "" {
		nq := url.Values{"range": {rng}, "continue": {l.Continue}}
		for k, v := range d.Filter {
			nq.Set(k, v)
		}
		d.Next = nq.Encode()
	}
	return nil
}

// chartData is what static/js/app.js draws with uPlot.
type chartData struct {
	Time     []int64 `json:"t"`
	Requests []int64 `json:"requests"`
	Denials  []int64 `json:"denials"`
}

type policyCount struct {
	Policy string
	Count  int64
}

// rangeOf reads ?range=, 24h by default.
func rangeOf(r *request) (name, since, bucket string, names []string) {
	rg := ranges[1]
	for _, x := range ranges {
		names = append(names, x.Name)
		if x.Name == r.r.URL.Query().Get("range") {
			rg = x
		}
	}
	return rg.Name, r.s.Now().Add(-rg.Window).UTC().Format(time.RFC3339), rg.Bucket, names
}

// decisions is the table. The chart and the top denying policies come
// from the summary, which htmx loads after the page. The summary reads the
// decision counts (a few ms for any range on a million decisions, where
// counting the decisions took 600 ms for a day), and a page of the table
// is an index scan (BenchmarkDecisionsPage); loading it apart still
// shows the table first when the database is busy.
func (s *Server) decisions(r *request) error {
	var pg decisionsPage
	var since string
	pg.Range, since, _, pg.Ranges = rangeOf(r)
	if err := pg.read(r, p("tenants", r.tenant(), "decisions"), decisionFilters, pg.Range, since); err != nil {
		return err
	}
	return r.page("decisions", r.view("Decisions", "decisions", pg))
}

// decisionsSummary is the chart and the top denying policies of a range
// (and cluster): a fragment for htmx, or a page of its own.
func (s *Server) decisionsSummary(r *request) error {
	t := r.tenant()
	var pg decisionsPage
	var since, bucket string
	pg.Range, since, bucket, pg.Ranges = rangeOf(r)
	var st apiv1.DecisionStats
	sq := url.Values{"since": {since}, "bucket": {bucket}}
	if c := r.r.URL.Query().Get("cluster"); c != "" {
		sq.Set("cluster", c)
	}
	if err := r.api("GET", p("tenants", t, "decisions", "stats"), sq, nil, &st); err != nil {
		return err
	}
	var byPolicy map[string]int64
	pg.Requests, pg.Denials, byPolicy = totals(st)
	for _, b := range st.Buckets {
		pg.Chart.Time = append(pg.Chart.Time, b.Start.Unix())
		pg.Chart.Requests = append(pg.Chart.Requests, b.Total)
		pg.Chart.Denials = append(pg.Chart.Denials, b.Verdicts["denied"]+b.Verdicts["rejected"])
	}
	for p, n := range byPolicy {
		pg.Top = append(pg.Top, policyCount{p, n})
	}
	slices.SortFunc(pg.Top, func(a, b policyCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Policy, b.Policy))
	})
	pg.Top = pg.Top[:min(len(pg.Top), 10)]
	v := r.view("Decisions summary", "decisions", pg)
	if r.htmx() {
		return r.fragment("decisions_summary", "summary", v)
	}
	return r.page("decisions_summary", v)
}

// findDecision finds one decision. The API lists decisions by time, so
// it asks for the one microsecond (the stored precision) of at and picks
// the id.
func findDecision(r *request, id, atText string) (apiv1.Decision, error) {
	at, err := time.Parse(time.RFC3339Nano, atText)
	if err != nil {
		return apiv1.Decision{}, badRequest("the link to a decision needs its time (?at=)")
	}
	q := url.Values{"since": {at.Format(time.RFC3339Nano)}, "until": {at.Add(time.Microsecond).Format(time.RFC3339Nano)},
		"limit": {"500"}}
	var l list[apiv1.Decision]
	if err := r.api("GET", p("tenants", r.tenant(), "decisions"), q, nil, &l); err != nil {
		return apiv1.Decision{}, err
	}
	for _, d := range l.Items {
		if d.ID == id {
			return d, nil
		}
	}
	return apiv1.Decision{}, notFound("no decision %s at %s", id, at.Format(time.RFC3339Nano))
}

// decision shows one decision.
func (s *Server) decision(r *request) error {
	d, err := findDecision(r, r.r.PathValue("id"), r.r.URL.Query().Get("at"))
	if err != nil {
		return err
	}
	return r.page("decision", r.view("Decision "+d.ID, "decisions", d))
}
