package grafana_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/portcullis-dev/portcullis/deploy/grafana"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestMetricNames(t *testing.T) {
	tests := []struct {
		name, expr string
		want       []string
	}{
		{"rate by", `sum by (verdict) (rate(portcullis_webhook_requests_total{tenant=~"$tenant"}[$__rate_interval]))`,
			[]string{"portcullis_webhook_requests_total"}},
		{"quantile", `histogram_quantile(0.99, sum by (tenant, le) (rate(a_seconds_bucket{x="y(z)"}[5m])))`, []string{"a_seconds_bucket"}},
		{"ratio", `sum(rate(a_total[1m])) / (sum(rate(a_total[1m])) + sum(rate(b_total[1m])))`, []string{"a_total", "b_total"}},
		{"binary with on", `a / on (instance) group_left (tenant) b > bool 0`, []string{"a", "b"}},
		{"topk range", `topk(10, sum by (tenant, policy) (increase(c_total[$__range])))`, []string{"c_total"}},
		{"bare gauge", `max by (instance) (g)`, []string{"g"}},
		{"label_values", `label_values(portcullis_webhook_requests_total, tenant)`, []string{"portcullis_webhook_requests_total"}},
		{"label_values of a label", `label_values(tenant)`, nil},
		{"number and scientific", `x > 1e3 and y offset 5m`, []string{"x", "y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := grafana.MetricNames(tt.expr); !slices.Equal(got, tt.want) {
				t.Fatalf("MetricNames(%q) = %q, want %q", tt.expr, got, tt.want)
			}
		})
	}
}

func TestParseLabels(t *testing.T) {
	r := grafana.Parse(`histogram_quantile(0.99, sum by (tenant, le) (rate(a_bucket{tenant=~"$tenant", verdict!="x{y}"}[5m]))) / on (instance) group_left (pod) b {job="j"}`)
	if !slices.Equal(r.Metrics, []string{"a_bucket", "b"}) {
		t.Errorf("metrics %q", r.Metrics)
	}
	if !slices.Equal(r.Matchers["a_bucket"], []string{"tenant", "verdict"}) || !slices.Equal(r.Matchers["b"], []string{"job"}) {
		t.Errorf("matchers %q", r.Matchers)
	}
	if !slices.Equal(r.Grouping, []string{"instance", "le", "pod", "tenant"}) {
		t.Errorf("grouping %q", r.Grouping)
	}
	if r := grafana.Parse(`label_values(m{a="1"}, tenant)`); !slices.Equal(r.Metrics, []string{"m"}) || !slices.Equal(r.Grouping, []string{"tenant"}) || !slices.Equal(r.Matchers["m"], []string{"a"}) {
		t.Errorf("label_values: %+v", r)
	}
}

// Every panel and variable reads its datasource from the dashboard's
// datasource variable, so the dashboards import into any Grafana.
func TestDatasourcesAreVariables(t *testing.T) {
	want := map[string]string{"fleet.json": "prometheus", "tenant-decisions.json": "grafana-postgresql-datasource"}
	if names := grafana.Names(); !slices.Equal(names, []string{"fleet.json", "tenant-decisions.json"}) {
		t.Fatalf("dashboards %q", names)
	}
	for name, dsType := range want {
		d, err := grafana.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if d.UID == "" || d.Title == "" {
			t.Errorf("%s: uid %q title %q", name, d.UID, d.Title)
		}
		if len(d.Templating.List) == 0 || d.Templating.List[0].Name != "datasource" || d.Templating.List[0].Type != "datasource" {
			t.Errorf("%s: the first variable is not the datasource", name)
		} else if q := strings.Trim(string(d.Templating.List[0].Query), `"`); q != dsType {
			t.Errorf("%s: datasource variable of type %q, want %q", name, q, dsType)
		}
	}
	qs, err := grafana.Queries()
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) < 20 {
		t.Fatalf("only %d queries found", len(qs))
	}
	for _, q := range qs {
		if q.Datasource != "${datasource}" {
			t.Errorf("%s: %s: datasource uid %q, want ${datasource}", q.Dashboard, q.Where, q.Datasource)
		}
		if (q.Expr == "") == (q.RawSQL == "") {
			t.Errorf("%s: %s: want exactly one of a PromQL or a SQL query", q.Dashboard, q.Where)
		}
	}
}

// grafanaMacros stand in for the macros Grafana substitutes before a query
// reaches Postgres.
var grafanaMacros = []struct {
	re  *regexp.Regexp
	sub string
}{
	{regexp.MustCompile(`\$__timeGroupAlias\((\w+),[^)]*\)`), `to_timestamp(floor(extract(epoch from $1) / 60) * 60) AS "time"`},
	{regexp.MustCompile(`\$__timeFilter\((\w+)\)`), `$1 BETWEEN now() - interval '1 hour' AND now()`},
}

var sqlstringVar = regexp.MustCompile(`\$\{(\w+):sqlstring\}`)

// expand substitutes what Grafana does: the macros, and each variable's
// values as ${name:sqlstring} has them, quoted and comma-separated. A
// variable without values is left as it is, for the caller to report.
func expand(sql string, vars map[string][]string) string {
	for _, m := range grafanaMacros {
		sql = m.re.ReplaceAllString(sql, m.sub)
	}
	return sqlstringVar.ReplaceAllStringFunc(sql, func(ref string) string {
		values := vars[sqlstringVar.FindStringSubmatch(ref)[1]]
		if len(values) == 0 {
			return ref
		}
		quoted := make([]string, len(values))
		for i, v := range values {
			quoted[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		}
		return strings.Join(quoted, ",")
	})
}

// Each SQL query is planned by Postgres against the migrated decisions
// table (migrations/00004_decisions.sql): a misspelt or unknown column, or
// a syntax error, fails here rather than in an SRE's Grafana.
func TestSQLReadsOnlyDecisionColumns(t *testing.T) {
	ctx := context.Background()
	// The migrated schema: the decisions table as the recorder writes it.
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	qs, err := grafana.Queries()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, q := range qs {
		if q.RawSQL == "" {
			continue
		}
		n++
		sql := expand(q.RawSQL, map[string][]string{"tenant": {"1"}, "cluster": {"prod", "staging"}})
		if strings.Contains(sql, "$") {
			t.Errorf("%s: %s: a Grafana macro or variable this test does not know: %s", q.Dashboard, q.Where, sql)
			continue
		}
		if _, err := conn.Exec(ctx, "EXPLAIN "+sql); err != nil {
			t.Errorf("%s: %s: %v\n%s", q.Dashboard, q.Where, err, sql)
		}
	}
	if n < 8 {
		t.Fatalf("only %d SQL queries found", n)
	}
	// The check must be able to fail.
	if _, err := conn.Exec(ctx, "EXPLAIN SELECT tenant_name FROM decisions"); err == nil {
		t.Fatal("EXPLAIN accepted an unknown column")
	}
}
