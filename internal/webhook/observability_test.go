package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/portcullis-dev/portcullis/internal/policystore"
	"github.com/portcullis-dev/portcullis/internal/webhook"
)

func serve(t *testing.T, h *webhook.Handler, path, auth, body string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	// As the gateway's mux routes it (the span is named after the pattern).
	req.Pattern = "/t/{tenant}/" + path[strings.LastIndexByte(path, '/')+1:]
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// A known sequence of requests gives exact counter values.
func TestMetricsAfterKnownRequests(t *testing.T) {
	const v1 = "admission.k8s.io/v1"
	f := newFixture(t)
	for _, r := range []struct{ auth, body string }{
		{"Bearer good", review(v1, "a1", "pods", "CREATE", goodPod, false)},
		{"Bearer good", review(v1, "a2", "pods", "UPDATE", goodPod, false)},
		{"Bearer good", review(v1, "d1", "pods", "CREATE", badPod, false)},
		{"Bearer good", review(v1, "w1", "pods", "CREATE", latestPod, false)},
		{"Bearer stolen", review(v1, "x1", "pods", "CREATE", goodPod, false)},
	} {
		serve(t, f.h, "/t/acme/validate", r.auth, r.body)
	}
	want := `
# HELP portcullis_webhook_requests_total Webhook requests answered, by tenant, endpoint, operation, verdict and HTTP status (200 for every evaluated request, denials included).
# TYPE portcullis_webhook_requests_total counter
portcullis_webhook_requests_total{code="200",endpoint="validate",operation="CREATE",tenant="acme",verdict="allowed"} 1
portcullis_webhook_requests_total{code="200",endpoint="validate",operation="CREATE",tenant="acme",verdict="denied"} 1
portcullis_webhook_requests_total{code="200",endpoint="validate",operation="CREATE",tenant="acme",verdict="warned"} 1
portcullis_webhook_requests_total{code="200",endpoint="validate",operation="UPDATE",tenant="acme",verdict="allowed"} 1
# HELP portcullis_policy_rejections_total Bindings that denied a request, by tenant, policy, binding and the status code of the answer (as the apiserver's apiserver_admission_webhook_rejection_count). Policy and binding names come from the tenants' configuration, so their number is bounded by it.
# TYPE portcullis_policy_rejections_total counter
portcullis_policy_rejections_total{binding="require-team",code="422",policy="require-team",tenant="acme"} 1
# HELP portcullis_webhook_authentication_failures_total Webhook requests refused by authentication, by reason.
# TYPE portcullis_webhook_authentication_failures_total counter
portcullis_webhook_authentication_failures_total{reason="unknown token"} 1
`
	if err := testutil.GatherAndCompare(f.reg, strings.NewReader(want),
		"portcullis_webhook_requests_total", "portcullis_policy_rejections_total",
		"portcullis_webhook_authentication_failures_total",
		"portcullis_policy_fail_open_total", "portcullis_policy_fail_closed_total"); err != nil {
		t.Fatal(err)
	}
	// Unauthenticated requests are not answered for a tenant: only the four
	// others are timed.
	for _, name := range []string{"portcullis_webhook_request_duration_seconds", "portcullis_webhook_evaluation_duration_seconds"} {
		if n := histogramCount(t, f.reg, name); n != 4 {
			t.Errorf("%s counted %d requests, want 4", name, n)
		}
	}
}

func histogramCount(t *testing.T, reg *prometheus.Registry, name string) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return n
}

// With --metrics-tenant-label=false no series names a tenant or a cluster.
func TestTenantLabelOff(t *testing.T) {
	f := newFixture(t)
	f.reg = prometheus.NewRegistry()
	f.h.Metrics = webhook.NewMetrics(f.reg, false)
	serve(t, f.h, "/t/acme/validate", "Bearer good", review("admission.k8s.io/v1", "d1", "pods", "CREATE", badPod, false))
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			series++
			for _, l := range m.GetLabel() {
				if (l.GetName() == "tenant" || l.GetName() == "cluster") && l.GetValue() != "" {
					t.Errorf("%s has tenant=%q", mf.GetName(), l.GetValue())
				}
			}
		}
	}
	if series == 0 {
		t.Fatal("no series gathered")
	}
}

// failurePolicies fail in every way the cause label names.
const failurePolicies = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: broken}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
  validations:
  - expression: "object.spec.containers.all(c, c.image.startsWith("
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: broken}
spec:
  policyName: broken
  validationActions: [Deny]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: broken-variable}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
  variables:
  - name: image
    expression: "object.spec.containers[0].image.startsWith("
  validations:
  - expression: "variables.image == 'x'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: broken-variable}
spec:
  policyName: broken-variable
  validationActions: [Deny]
---
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
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: prod-only}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
  validations:
  - expression: "true"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: prod-only}
spec:
  policyName: prod-only
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {env: prod}
`

// Each cause of a failurePolicy decision is told apart, from the real
// evaluator's results, so that a cause the evaluator sets wrongly, or a
// label failureCause maps wrongly, fails here. broken-variable's validation
// compiles but reads a variable that does not.
func TestFailureCauses(t *testing.T) {
	f := newFixture(t)
	snap := &policystore.Snapshot{TenantID: 7, Version: 1, Compiled: compileYAML(t, failurePolicies)}
	if len(snap.Compiled.CompileErrors()) == 0 {
		t.Fatal("the broken policy compiled")
	}
	f.h.Snapshot = func(context.Context, int64) (*policystore.Snapshot, error) { return snap, nil }

	const v1 = "admission.k8s.io/v1"
	// In "default" (known, no env label) prod-only does not match.
	serve(t, f.h, "/t/acme/validate", "Bearer good", review(v1, "p1", "pods", "CREATE", goodPod, false))
	// In a namespace the inventory lacks, prod-only cannot tell.
	elsewhere := strings.Replace(review(v1, "p2", "pods", "CREATE", goodPod, false), `"namespace":"default"`, `"namespace":"unlisted"`, 1)
	serve(t, f.h, "/t/acme/validate", "Bearer good", elsewhere)
	// No time left: every binding times out.
	serve(t, f.h, "/t/acme/validate?timeout=1ms", "Bearer good", review(v1, "p3", "pods", "CREATE", goodPod, false))

	want := `
# HELP portcullis_policy_fail_closed_total Bindings whose failurePolicy denied a request because of an error, by tenant, policy and cause (error, timeout, compile_error, unknown_namespace). Policy names come from the tenants' configuration, so their number is bounded by it.
# TYPE portcullis_policy_fail_closed_total counter
portcullis_policy_fail_closed_total{cause="compile_error",policy="broken",tenant="acme"} 2
portcullis_policy_fail_closed_total{cause="compile_error",policy="broken-variable",tenant="acme"} 2
portcullis_policy_fail_closed_total{cause="timeout",policy="broken",tenant="acme"} 1
portcullis_policy_fail_closed_total{cause="timeout",policy="broken-variable",tenant="acme"} 1
portcullis_policy_fail_closed_total{cause="unknown_namespace",policy="prod-only",tenant="acme"} 1
# HELP portcullis_policy_fail_open_total Bindings whose failurePolicy let a request through after an error, by tenant, policy and cause (error, timeout, compile_error, unknown_namespace). Policy names come from the tenants' configuration, so their number is bounded by it.
# TYPE portcullis_policy_fail_open_total counter
portcullis_policy_fail_open_total{cause="error",policy="lenient",tenant="acme"} 2
portcullis_policy_fail_open_total{cause="timeout",policy="lenient",tenant="acme"} 1
`
	if err := testutil.GatherAndCompare(f.reg, strings.NewReader(want),
		"portcullis_policy_fail_open_total", "portcullis_policy_fail_closed_total"); err != nil {
		t.Fatal(err)
	}
}

// The request's spans join the caller's trace: the server span is a child
// of the incoming traceparent and each step a child of the server span.
func TestSpansFollowTraceparent(t *testing.T) {
	f := newFixture(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	f.h.Tracer, f.h.Propagator = tp.Tracer("test"), propagation.TraceContext{}

	const traceID, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	body := review("admission.k8s.io/v1", "t1", "pods", "CREATE", badPod, false)
	if rec := serve(t, f.h, "/t/acme/validate", "Bearer good", body, "traceparent", "00-"+traceID+"-"+callerSpan+"-01"); rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	spans := exp.GetSpans()
	var server *tracetest.SpanStub
	for i := range spans {
		if spans[i].SpanKind == trace.SpanKindServer {
			server = &spans[i]
		}
	}
	if server == nil {
		t.Fatalf("no server span among %d", len(spans))
	}
	if got := server.Parent; got.TraceID().String() != traceID || got.SpanID().String() != callerSpan || !got.IsRemote() {
		t.Fatalf("server span parent = %v/%v remote=%v, want the caller's %s/%s", got.TraceID(), got.SpanID(), got.IsRemote(), traceID, callerSpan)
	}
	attrs := map[string]string{}
	for _, kv := range server.Attributes {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	if attrs["portcullis.verdict"] != "denied" || attrs["portcullis.tenant"] != "acme" || attrs["http.response.status_code"] != "200" ||
		attrs["url.scheme"] != "https" || attrs["http.route"] != "/t/{tenant}/validate" || attrs["server.address"] == "" {
		t.Errorf("server span attributes %v", attrs)
	}
	if server.Name != "POST /t/{tenant}/validate" {
		t.Errorf("server span name %q, want the HTTP conventions' method and route", server.Name)
	}
	var children []string
	for _, s := range spans {
		if s.Parent.SpanID() == server.SpanContext.SpanID() {
			if s.SpanContext.TraceID() != server.SpanContext.TraceID() {
				t.Errorf("%s is in trace %s", s.Name, s.SpanContext.TraceID())
			}
			children = append(children, s.Name)
		}
	}
	want := []string{"authenticate", "decode", "snapshot", "evaluate", "encode", "record"}
	if !slices.Equal(children, want) {
		t.Fatalf("children of the server span = %q, want %q", children, want)
	}

	// A caller that did not sample its trace gets no spans from us either.
	exp.Reset()
	serve(t, f.h, "/t/acme/validate", "Bearer good", body, "traceparent", "00-"+traceID+"-"+callerSpan+"-00")
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("%d spans exported for an unsampled trace", n)
	}
	// Without a traceparent the request starts its own trace.
	serve(t, f.h, "/t/acme/validate", "Bearer good", body)
	for _, s := range exp.GetSpans() {
		if s.SpanKind == trace.SpanKindServer && s.Parent.IsValid() {
			t.Fatalf("a request without traceparent has parent %v", s.Parent)
		}
	}
	if len(exp.GetSpans()) != 1+len(want) {
		t.Fatalf("%d spans for a request without traceparent", len(exp.GetSpans()))
	}
}

// A tenant costs a handful of series per replica: the latency histograms
// are fleet-wide, and a tenant that was never denied still shows a denied
// counter at 0.
func TestSeriesPerTenant(t *testing.T) {
	f := newFixture(t)
	for i := range 20 {
		if rec := serve(t, f.h, "/t/acme/validate", "Bearer good", review("admission.k8s.io/v1", fmt.Sprint("u", i), "pods", "CREATE", goodPod, false)); rec.Code != 200 {
			t.Fatalf("status %d", rec.Code)
		}
	}
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var series []string
	denied := false
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["tenant"] != "acme" {
				continue
			}
			series = append(series, mf.GetName())
			if mf.GetName() == "portcullis_webhook_requests_total" && labels["verdict"] == "denied" && m.GetCounter().GetValue() == 0 {
				denied = true
			}
		}
	}
	// requests_total allowed (and its pre-initialised denied twin), the
	// two seconds counters.
	if len(series) != 4 {
		t.Fatalf("%d series for one tenant with allowed requests only: %q", len(series), series)
	}
	if !denied {
		t.Fatal("no denied counter at 0 for a tenant that was never denied")
	}
}
