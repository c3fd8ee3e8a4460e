package main

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis-dev/portcullis/deploy/grafana"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// lenientPolicy errors on every Pod and fails open.
const lenientPolicy = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: lenient}
spec:
  failurePolicy: Ignore
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
  validations:
  - expression: "object.metadata.labels['missing'] == 'x'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: lenient}
spec:
  policyName: lenient
  validationActions: [Deny]
`

// One real gateway, a known sequence of requests, then the whole registry:
// exact counter deltas, promlint over the /metrics output, and every
// metric the dashboards chart.
func TestGatewayMetrics(t *testing.T) {
	// The database recorder, so that its metrics are in the registry.
	e := newRecordingE2E(t, pgtest.URL(t))
	e.onboard()
	applyAll(t, e.m, e.tenant.ID, lenientPolicy)
	testutil.Eventually(t, 10*time.Second, "the lenient policy to load", func() bool {
		before := counter(t, e.m, "portcullis_policy_fail_open_total", "policy", "lenient")
		e.post(e.client, "/t/acme/validate", e.token, "application/json", podReview("admission.k8s.io/v1", "probe", "default", goodPod, false))
		return counter(t, e.m, "portcullis_policy_fail_open_total", "policy", "lenient") > before
	})

	type series struct {
		name   string
		labels []string
	}
	watched := []series{
		{"portcullis_webhook_requests_total", []string{"tenant", "acme", "endpoint", "validate", "verdict", "allowed", "code", "200"}},
		{"portcullis_webhook_requests_total", []string{"tenant", "acme", "verdict", "denied"}},
		{"portcullis_policy_rejections_total", []string{"tenant", "acme", "policy", "require-team", "binding", "require-team", "code", "403"}},
		{"portcullis_policy_rejections_total", nil},
		{"portcullis_webhook_authentication_failures_total", nil},
		{"portcullis_policy_fail_open_total", []string{"tenant", "acme", "policy", "lenient", "cause", "error"}},
		{"portcullis_policy_fail_closed_total", []string{"tenant", "acme", "policy", "prod-no-latest", "cause", "unknown_namespace"}},
		{"portcullis_webhook_unknown_namespace_total", []string{"tenant", "acme", "cluster", "prod"}},
	}
	before := make([]float64, len(watched))
	for i, s := range watched {
		before[i] = counter(t, e.m, s.name, s.labels...)
	}
	const v1 = "admission.k8s.io/v1"
	for _, r := range []struct {
		token, body string
		want        int
	}{
		{e.token, podReview(v1, "a1", "default", goodPod, false), 200},
		{e.token, podReview(v1, "a2", "default", goodPod, false), 200},
		{e.token, podReview(v1, "d1", "default", noTeamPod, false), 200},
		{"not-a-token", podReview(v1, "x1", "default", goodPod, false), 401},
		// prod-no-latest needs the labels of a namespace the inventory lacks.
		{e.token, podReview(v1, "u1", "unlisted", goodPod, false), 200},
	} {
		if code, body := e.post(e.client, "/t/acme/validate", r.token, "application/json", r.body); code != r.want {
			t.Fatalf("status %d, want %d: %s", code, r.want, body)
		}
	}
	// 2 allowed; 2 denied (require-team; prod-no-latest failing closed);
	// 1 authentication failure; lenient failed open on all 4 evaluated.
	want := []float64{2, 2, 1, 2, 1, 4, 1, 1}
	for i, s := range watched {
		if got := counter(t, e.m, s.name, s.labels...) - before[i]; got != want[i] {
			t.Errorf("%s%v went up by %v, want %v", s.name, s.labels, got, want[i])
		}
	}

	// promlint over what Prometheus scrapes.
	resp, err := http.Get(e.m.MetricsURL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	problems, err := promlint.New(resp.Body).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}

	// Every metric in the dashboards is served, with the labels the
	// queries select and group by.
	served := servedLabels(t, e.m)
	for _, name := range []string{"portcullis_db_pool_acquired_connections", "portcullis_policy_cache_staleness_seconds",
		"portcullis_policy_cache_hits_total", "portcullis_policy_cache_misses_total"} {
		if served[name] == nil {
			t.Errorf("%s is not served", name)
		}
	}
	// Every portcullis metric is documented.
	doc, err := os.ReadFile("../../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := e.m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if name := mf.GetName(); strings.HasPrefix(name, "portcullis_") && !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/observability.md does not list %s", name)
		}
	}

	qs, err := grafana.Queries()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, q := range qs {
		refs := grafana.Parse(q.Expr)
		// Prometheus adds instance and job when it scrapes.
		known := map[string]bool{"instance": true, "job": true}
		for _, name := range refs.Metrics {
			checked++
			labels := served[name]
			if labels == nil {
				t.Errorf("%s: panel %q reads %s, which the gateway does not serve", q.Dashboard, q.Where, name)
				continue
			}
			for l := range labels {
				known[l] = true
			}
			for _, l := range refs.Matchers[name] {
				if !labels[l] && l != "instance" && l != "job" {
					t.Errorf("%s: panel %q selects %s by %s, a label it does not have", q.Dashboard, q.Where, name, l)
				}
			}
		}
		for _, l := range refs.Grouping {
			if !known[l] {
				t.Errorf("%s: panel %q groups by %s, which none of %q has", q.Dashboard, q.Where, l, refs.Metrics)
			}
		}
	}
	if checked < 30 {
		t.Fatalf("only %d metric references found in the dashboards", checked)
	}
}

// counter sums the samples of a counter family whose labels include the
// given name/value pairs.
func counter(t *testing.T, m *Main, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, s := range mf.GetMetric() {
			if hasLabels(s, labels) {
				sum += s.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
			return l.GetName() == pairs[i] && l.GetValue() == pairs[i+1]
		}) {
			return false
		}
	}
	return true
}

// servedLabels maps each series name the registry exposes (histogram and
// summary suffixes included) to its label names.
func servedLabels(t *testing.T, m *Main) map[string]map[string]bool {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]map[string]bool{}
	add := func(name string, labels map[string]bool) {
		if served[name] == nil {
			served[name] = map[string]bool{}
		}
		for l := range labels {
			served[name][l] = true
		}
	}
	for _, mf := range mfs {
		labels := map[string]bool{}
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		name := mf.GetName()
		add(name, labels)
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM:
			add(name+"_sum", labels)
			add(name+"_count", labels)
			labels["le"] = true
			add(name+"_bucket", labels)
		case dto.MetricType_SUMMARY:
			add(name+"_sum", labels)
			add(name+"_count", labels)
		}
	}
	return served
}

// otlpCollector is a loopback OTLP/HTTP receiver.
type otlpCollector struct {
	mu    sync.Mutex
	spans []exportedSpan
}

type exportedSpan struct{ name, traceID, parentID, spanID string }

func (c *otlpCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.spans = append(c.spans, exportedSpan{name: s.GetName(), traceID: hexOf(s.GetTraceId()),
					parentID: hexOf(s.GetParentSpanId()), spanID: hexOf(s.GetSpanId())})
			}
		}
	}
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }

// With --otlp-endpoint, a request's spans reach the collector in the
// caller's trace, and Close flushes them.
func TestTracesExportedAndFlushedOnClose(t *testing.T) {
	col := &otlpCollector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	e := newE2E(t, pgtest.URL(t), func(c *Config) { c.OTLPEndpoint = srv.URL })
	e.onboard()

	const traceID, caller = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	req, _ := http.NewRequest(http.MethodPost, e.m.WebhookURL()+"/t/acme/validate",
		strings.NewReader(podReview("admission.k8s.io/v1", "traced", "default", goodPod, false)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.token)
	req.Header.Set("traceparent", "00-"+traceID+"-"+caller+"-01")
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := e.m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	col.mu.Lock()
	defer col.mu.Unlock()
	var server string
	var children []string
	for _, s := range col.spans {
		if s.traceID == traceID && s.parentID == caller && s.name == "POST /t/{tenant}/validate" {
			server = s.spanID
		}
	}
	if server == "" {
		t.Fatalf("no server span in the caller's trace among %d spans", len(col.spans))
	}
	for _, s := range col.spans {
		if s.parentID == server {
			children = append(children, s.name)
		}
	}
	slices.Sort(children)
	if want := []string{"authenticate", "decode", "encode", "evaluate", "record", "snapshot"}; !slices.Equal(children, want) {
		t.Fatalf("children %q, want %q", children, want)
	}
}

// An admin API call is a server span named after its route, in the
// caller's trace, and the queries it makes are its client spans; the
// collector is found through the standard OTEL_EXPORTER_OTLP_ENDPOINT.
func TestAdminAPIAndDatabaseSpans(t *testing.T) {
	col := &otlpCollector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	e := newE2E(t, pgtest.URL(t))
	a := operatorCLI(t, e)
	a.ok("tenant", "create", "acme")

	const traceID, caller = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, _ := http.NewRequest(http.MethodGet, e.m.AdminURL()+"/api/v1/tenants/acme/clusters", nil)
	req.Header.Set("Authorization", "Bearer "+a.env["PORTCULLIS_TOKEN"])
	req.Header.Set("traceparent", "00-"+traceID+"-"+caller+"-01")
	resp, err := httpsClient(t, e.m.CAFile).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if err := e.m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	var server string
	for _, s := range col.spans {
		if s.traceID == traceID && s.parentID == caller && s.name == "GET /api/v1/tenants/{tenant}/clusters" {
			server = s.spanID
		}
	}
	if server == "" {
		t.Fatalf("no admin API server span in the caller's trace among %v", col.spans)
	}
	var queries []string
	for _, s := range col.spans {
		if s.parentID == server {
			queries = append(queries, s.name)
		}
	}
	if !slices.Contains(queries, "SELECT") {
		t.Fatalf("the call's children are %q, want its SELECTs", queries)
	}
}
