package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/request"

	"github.com/portcullis-dev/portcullis/internal/admission"
	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/policystore"
)

// mutatingPolicies label pods and namespaces, and refuse (through the typed
// object, whatever the failurePolicy) a pod labelled bogus.
const mutatingPolicies = `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: add-owner}
spec:
  failurePolicy: Fail
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["pods", "namespaces"]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'owner': 'platform'}}}"
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: add-owner}
spec:
  policyName: add-owner
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: bogus-field}
spec:
  failurePolicy: Ignore
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
  matchConditions:
  - name: bogus
    expression: "'bogus' in object.metadata.labels"
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: "[JSONPatch{op: 'add', path: '/spec/bogus', value: 'x'}]"
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: bogus-field}
spec:
  policyName: bogus-field
`

const (
	ownedPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","labels":{"team":"a","owner":"platform"}},"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}`
	bogusPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","labels":{"bogus":"1"}},"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}`
)

func newMutateFixture(t testing.TB) (*fixture, *evaluator.Snapshot) {
	f := newFixture(t)
	compiled := compileYAML(t, mutatingPolicies)
	if errs := compiled.CompileErrors(); len(errs) > 0 {
		t.Fatalf("compile: %v", errs)
	}
	snap := &policystore.Snapshot{TenantID: 7, Version: 43, Compiled: compiled}
	f.h.Snapshot = func(ctx context.Context, tenantID int64) (*policystore.Snapshot, error) { return snap, nil }
	f.h.Kind = evaluator.Mutating
	return f, compiled
}

func postMutate(f *fixture, path, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer good")
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

func TestMutate(t *testing.T) {
	const v1, v1beta1 = "admission.k8s.io/v1", "admission.k8s.io/v1beta1"
	tests := []struct {
		name string
		body string
		// wantPatch: the answer carries a patch; the patch applied to
		// request.object must give what Mutate returns as the object.
		wantPatch   bool
		wantAllowed bool
		wantVerdict decisions.Verdict
		apiVersion  string
	}{
		{name: "mutated v1", body: review(v1, "m1", "pods", "CREATE", goodPod, false), wantPatch: true, wantAllowed: true, wantVerdict: decisions.VerdictAllowed, apiVersion: v1},
		{name: "mutated v1beta1", body: review(v1beta1, "m2", "pods", "CREATE", badPod, false), wantPatch: true, wantAllowed: true, wantVerdict: decisions.VerdictAllowed, apiVersion: v1beta1},
		{name: "nothing to change: no patch", body: review(v1, "m3", "pods", "CREATE", ownedPod, false), wantAllowed: true, wantVerdict: decisions.VerdictAllowed, apiVersion: v1},
		{name: "dry run is mutated like others", body: review(v1, "m4", "pods", "CREATE", goodPod, true), wantPatch: true, wantAllowed: true, wantVerdict: decisions.VerdictAllowed, apiVersion: v1},
		{name: "delete is not mutated", body: review(v1, "m5", "pods", "DELETE", `null`, false), wantAllowed: true, wantVerdict: decisions.VerdictAllowed, apiVersion: v1},
		{name: "a result the typed object refuses is denied", body: review(v1, "m6", "pods", "CREATE", bogusPod, false), wantVerdict: decisions.VerdictDenied, apiVersion: v1},
		{name: "denied v1beta1", body: review(v1beta1, "m7", "pods", "CREATE", bogusPod, false), wantVerdict: decisions.VerdictDenied, apiVersion: v1beta1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, compiled := newMutateFixture(t)
			rec := postMutate(f, "/t/acme/mutate?timeout=10s", tt.body)
			if rec.Code != 200 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			rev, err := admission.Decode([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			want := compiled.Evaluate(context.Background(), evaluator.Mutating, rev.Request, evaluator.WithNamespaces(evaluator.NamespaceMap{}))
			resp := checkMutating(t, tt.apiVersion, rev.UID, rec.Body.Bytes())
			if resp.Allowed != tt.wantAllowed || len(resp.Warnings) != 0 || len(resp.AuditAnnotations) != 0 {
				t.Fatalf("allowed=%v warnings=%q annotations=%v: %s", resp.Allowed, resp.Warnings, resp.AuditAnnotations, rec.Body)
			}
			if !bytes.Contains(rec.Body.Bytes(), []byte(`"apiVersion":"`+tt.apiVersion+`"`)) {
				t.Fatalf("answer not in %s: %s", tt.apiVersion, rec.Body)
			}
			if !tt.wantAllowed {
				if resp.Result == nil || want.Status == nil || resp.Result.Code != want.Status.Code || resp.Result.Message != want.Status.Message || resp.Result.Reason != want.Status.Reason {
					t.Fatalf("status %+v, want Mutate's %+v", resp.Result, want.Status)
				}
			}
			if (len(resp.Patch) > 0) != tt.wantPatch || (resp.PatchType != "") != tt.wantPatch {
				t.Fatalf("patch %s (type %q), want a patch: %v", resp.Patch, resp.PatchType, tt.wantPatch)
			}
			if tt.wantPatch {
				if resp.PatchType != "JSONPatch" {
					t.Fatalf("patchType %q", resp.PatchType)
				}
				var sent struct {
					Request struct{ Object json.RawMessage }
				}
				if err := json.Unmarshal([]byte(tt.body), &sent); err != nil {
					t.Fatal(err)
				}
				p, err := jsonpatch.DecodePatch(resp.Patch)
				if err != nil {
					t.Fatal(err)
				}
				patched, err := p.Apply(sent.Request.Object)
				if err != nil {
					t.Fatalf("applying %s: %v", resp.Patch, err)
				}
				var got any
				if err := json.Unmarshal(patched, &got); err != nil {
					t.Fatal(err)
				}
				wantObj, _ := json.Marshal(want.Object)
				var wantAny any
				_ = json.Unmarshal(wantObj, &wantAny)
				if !reflect.DeepEqual(got, wantAny) {
					t.Fatalf("patched object %s, want %s", patched, wantObj)
				}
				if !strings.Contains(string(patched), `"owner":"platform"`) {
					t.Fatalf("the owner label is missing: %s", patched)
				}
			}
			if len(f.recorded) != 1 {
				t.Fatalf("%d decisions recorded", len(f.recorded))
			}
			d := f.recorded[0]
			if d.Verdict != tt.wantVerdict || d.HTTPStatus != 200 || d.SnapshotVersion != 43 || d.TenantName != "acme" || d.DryRun != strings.Contains(tt.name, "dry run") {
				t.Fatalf("decision %+v", d)
			}
			if d.Endpoint != decisions.EndpointMutate || !bytes.Equal(d.Patch, resp.Patch) || len(d.Bindings) != len(want.Bindings) {
				t.Fatalf("decision endpoint %q patch %s bindings %+v", d.Endpoint, d.Patch, d.Bindings)
			}
			for i, b := range d.Bindings {
				if b.Mutated != want.Bindings[i].Mutated || b.Reinvoked != want.Bindings[i].Reinvoked || b.Policy != want.Bindings[i].Policy {
					t.Fatalf("decision binding %d %+v, evaluator's %+v", i, b, want.Bindings[i])
				}
			}
			if got := requestsCounted(t, f.reg, "mutate", d.Operation, string(d.Verdict), "200"); got != 1 {
				t.Fatalf("requests{endpoint=mutate} = %v", got)
			}
		})
	}
}

// checkMutating runs the apiserver's verifier as it checks a mutating
// webhook's answer: only there may a patch appear.
func checkMutating(t *testing.T, apiVersion string, uid types.UID, body []byte) *request.AdmissionResponse {
	t.Helper()
	return checkAs(t, apiVersion, uid, body, true)
}

// The bad-input answers, the cold-replica 503 and panic safety are the
// validating endpoint's: the same code path, checked here through /mutate.
func TestMutateSharesTheValidatePath(t *testing.T) {
	tests := []struct {
		name       string
		setup      func(f *fixture)
		method     string
		auth       string
		body       string
		wantCode   int
		wantInBody string
		wantVerdct decisions.Verdict // empty: nothing recorded
	}{
		{name: "GET", method: http.MethodGet, wantCode: 405, wantInBody: "send the AdmissionReview with POST"},
		{name: "no credential", auth: "-", body: review("admission.k8s.io/v1", "u", "pods", "CREATE", goodPod, false), wantCode: 401, wantInBody: "unauthenticated"},
		{name: "another tenant's credential", auth: "Bearer other-tenant", body: review("admission.k8s.io/v1", "u", "pods", "CREATE", goodPod, false), wantCode: 403, wantInBody: "forbidden"},
		{name: "too large", body: `{"pad":"` + strings.Repeat("x", 9<<20) + `"}`, wantCode: 413, wantInBody: "larger than 8388608 bytes", wantVerdct: decisions.VerdictRejected},
		{name: "malformed JSON", body: `{"apiVersion":`, wantCode: 400, wantInBody: "not a valid AdmissionReview JSON", wantVerdct: decisions.VerdictRejected},
		{name: "cold and the database away", body: review("admission.k8s.io/v1", "u", "pods", "CREATE", goodPod, false), wantCode: 503, wantInBody: "failurePolicy", wantVerdct: decisions.VerdictError,
			setup: func(f *fixture) {
				f.h.Snapshot = func(ctx context.Context, tenantID int64) (*policystore.Snapshot, error) {
					return nil, &fault.Error{Code: fault.Unavailable, Message: "down", Err: errors.New("connection refused")}
				}
			}},
		{name: "panic", body: review("admission.k8s.io/v1", "u", "pods", "CREATE", goodPod, false), wantCode: 500, wantInBody: "internal error", wantVerdct: decisions.VerdictError,
			setup: func(f *fixture) {
				f.h.Snapshot = func(ctx context.Context, tenantID int64) (*policystore.Snapshot, error) { panic("boom") }
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := newMutateFixture(t)
			if tt.setup != nil {
				tt.setup(f)
			}
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			req := httptest.NewRequest(method, "/t/acme/mutate", strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			switch tt.auth {
			case "":
				req.Header.Set("Authorization", "Bearer good")
			case "-":
			default:
				req.Header.Set("Authorization", tt.auth)
			}
			rec := httptest.NewRecorder()
			f.h.ServeHTTP(rec, req)
			if rec.Code != tt.wantCode || !strings.Contains(rec.Body.String(), tt.wantInBody) || strings.Contains(rec.Body.String(), "connection refused") {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			var st struct{ Kind, Message string }
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Kind != "Status" || st.Message == "" {
				t.Fatalf("error body is not a Status with a message: %s", rec.Body)
			}
			if tt.wantVerdct == "" {
				if len(f.recorded) != 0 {
					t.Fatalf("decisions %+v", f.recorded)
				}
				return
			}
			if len(f.recorded) != 1 || f.recorded[0].Verdict != tt.wantVerdct || f.recorded[0].HTTPStatus != tt.wantCode {
				t.Fatalf("decisions %+v", f.recorded)
			}
			if got := requestsCounted(t, f.reg, "mutate", f.recorded[0].Operation, string(tt.wantVerdct), strconv.Itoa(tt.wantCode)); got != 1 {
				t.Fatalf("requests{endpoint=mutate} = %v", got)
			}
		})
	}
}

// The mutating webhook runs before validation, and a later step may still
// refuse the object: /mutate learns no namespace, whatever the request.
func TestMutateLearnsNothing(t *testing.T) {
	for _, op := range []string{"CREATE", "UPDATE", "DELETE"} {
		t.Run(op, func(t *testing.T) {
			f, _ := newMutateFixture(t)
			object := goodNS
			if op == "DELETE" {
				object = `null`
			}
			rec := postMutate(f, "/t/acme/mutate", review("admission.k8s.io/v1", "u", "namespaces", op, object, false))
			resp := checkMutating(t, "admission.k8s.io/v1", "u", rec.Body.Bytes())
			if !resp.Allowed || (op != "DELETE") != (len(resp.Patch) > 0) {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			if len(f.learned) != 0 || len(f.terminated) != 0 {
				t.Fatalf("learned %v terminated %v", f.learned, f.terminated)
			}
		})
	}
}

// requestsCounted is portcullis_webhook_requests_total for tenant acme and
// the given endpoint, operation, verdict and code.
func requestsCounted(t *testing.T, reg *prometheus.Registry, endpoint, op, verdict, code string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"tenant": "acme", "endpoint": endpoint, "operation": op, "verdict": verdict, "code": code}
	for _, mf := range mfs {
		if mf.GetName() != "portcullis_webhook_requests_total" {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if want[l.GetName()] != l.GetValue() {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// Mutations count once per request and policy; failures count by cause.
func TestMutationMetrics(t *testing.T) {
	f, _ := newMutateFixture(t)
	for i, body := range []string{goodPod, ownedPod, bogusPod} {
		rec := postMutate(f, "/t/acme/mutate", review("admission.k8s.io/v1", "u"+strconv.Itoa(i), "pods", "CREATE", body, false))
		if rec.Code != 200 {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	// ownedPod: add-owner applied its configuration, which changed nothing;
	// the plugin counts that as a mutation. bogusPod: add-owner mutated,
	// then bogus-field's result was refused (a 500 whatever its Ignore).
	const want = `
# HELP portcullis_policy_mutations_total Requests to /mutate in which a MutatingAdmissionPolicy's mutations applied (even ones that changed nothing, as the plugin counts them), by tenant and policy, once per request and policy. Policy names come from the tenants' configuration, so their number is bounded by it.
# TYPE portcullis_policy_mutations_total counter
portcullis_policy_mutations_total{policy="add-owner",tenant="acme"} 3
# HELP portcullis_policy_mutation_failures_total MutatingAdmissionPolicy bindings that failed on /mutate, whatever their failurePolicy did with it, by tenant, policy and cause (error, timeout, compile_error, unknown_namespace). Policy names come from the tenants' configuration, so their number is bounded by it.
# TYPE portcullis_policy_mutation_failures_total counter
portcullis_policy_mutation_failures_total{cause="error",policy="bogus-field",tenant="acme"} 1
`
	if err := testutil.GatherAndCompare(f.reg, strings.NewReader(want),
		"portcullis_policy_mutations_total", "portcullis_policy_mutation_failures_total"); err != nil {
		t.Fatal(err)
	}
	// The validating endpoint counts no mutation.
	f.h.Kind = evaluator.Validating
	postMutate(f, "/t/acme/validate", review("admission.k8s.io/v1", "v", "pods", "CREATE", goodPod, false))
	if err := testutil.GatherAndCompare(f.reg, strings.NewReader(want),
		"portcullis_policy_mutations_total", "portcullis_policy_mutation_failures_total"); err != nil {
		t.Fatal(err)
	}
}
