package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/request"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/policystore"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
	"github.com/portcullis-dev/portcullis/internal/webhook"
)

const policies = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: require-team}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["pods", "namespaces"]}
  validations:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
    message: "the team label is required"
  auditAnnotations:
  - key: team
    valueExpression: "has(object.metadata.labels) && 'team' in object.metadata.labels ? string(object.metadata.labels['team']) : 'none'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: require-team}
spec:
  policyName: require-team
  validationActions: [Deny]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: no-latest}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
  validations:
  - expression: "object.spec.containers.all(c, !c.image.endsWith(':latest'))"
    message: "do not use :latest"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-latest-warn}
spec:
  policyName: no-latest
  validationActions: [Warn, Audit]
`

func compile(t testing.TB) *evaluator.Snapshot {
	t.Helper()
	s := compileYAML(t, policies)
	if errs := s.CompileErrors(); len(errs) > 0 {
		t.Fatalf("compile: %v", errs)
	}
	return s
}

// compileYAML compiles policies and bindings, keeping compile errors in the
// snapshot as the gateway does.
func compileYAML(t testing.TB, docs string) *evaluator.Snapshot {
	t.Helper()
	var objs evaluator.Objects
	for _, doc := range strings.Split(docs, "\n---\n") {
		var meta struct{ Kind string }
		_ = yaml.Unmarshal([]byte(doc), &meta)
		switch meta.Kind {
		case "ValidatingAdmissionPolicy":
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			if err := yaml.UnmarshalStrict([]byte(doc), p); err != nil {
				t.Fatal(err)
			}
			objs.Policies = append(objs.Policies, p)
		case "ValidatingAdmissionPolicyBinding":
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			if err := yaml.UnmarshalStrict([]byte(doc), b); err != nil {
				t.Fatal(err)
			}
			objs.Bindings = append(objs.Bindings, b)
		case "MutatingAdmissionPolicy":
			p := &admissionregistrationv1.MutatingAdmissionPolicy{}
			if err := yaml.UnmarshalStrict([]byte(doc), p); err != nil {
				t.Fatal(err)
			}
			objs.MutatingPolicies = append(objs.MutatingPolicies, p)
		case "MutatingAdmissionPolicyBinding":
			b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
			if err := yaml.UnmarshalStrict([]byte(doc), b); err != nil {
				t.Fatal(err)
			}
			objs.MutatingBindings = append(objs.MutatingBindings, b)
		}
	}
	return evaluator.Compile(objs, evaluator.CompileOptions{Mode: evaluator.NewExpressions})
}

type fixture struct {
	h          *webhook.Handler
	reg        *prometheus.Registry
	mu         sync.Mutex
	recorded   []*decisions.Decision
	learned    []string // provisional
	committed  []string
	terminated []string
}

func (f *fixture) Record(d *decisions.Decision) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recorded = append(f.recorded, d)
}

func newFixture(t testing.TB) *fixture {
	snap := &policystore.Snapshot{TenantID: 7, Version: 42, Compiled: compile(t)}
	f := &fixture{reg: prometheus.NewRegistry()}
	f.h = &webhook.Handler{
		Authenticate: func(r *http.Request) (tenancy.Identity, error) {
			switch r.Header.Get("Authorization") {
			case "Bearer good":
				return tenancy.Identity{TenantID: 7, TenantName: "acme", ClusterID: 3, ClusterName: "prod"}, nil
			case "Bearer url-secret": // stands for a URL secret's path
				return tenancy.Identity{TenantID: 7, TenantName: "acme", ClusterID: 3, ClusterName: "prod", CredentialType: tenancy.CredentialURL}, nil
			case "Bearer other-tenant":
				return tenancy.Identity{}, &fault.Error{Code: fault.Forbidden, Message: "forbidden", Reason: "tenant mismatch"}
			}
			return tenancy.Identity{}, &fault.Error{Code: fault.Unauthenticated, Message: "unauthenticated", Reason: "unknown token"}
		},
		Snapshot: func(ctx context.Context, tenantID int64) (*policystore.Snapshot, error) {
			if tenantID != 7 {
				t.Errorf("snapshot asked for tenant %d", tenantID)
			}
			return snap, nil
		},
		Namespaces: func(ctx context.Context, tenantID, clusterID int64) (evaluator.NamespaceLookup, error) {
			return evaluator.NamespaceMap{"default": &corev1.Namespace{}}, nil
		},
		Observe: func(_, _ int64, committed, provisional *corev1.Namespace) {
			f.mu.Lock()
			if committed != nil {
				f.committed = append(f.committed, committed.Name)
			}
			if provisional != nil {
				f.learned = append(f.learned, provisional.Name)
			}
			f.mu.Unlock()
		},
		LearnTerminating: func(_, _ int64, name string) {
			f.mu.Lock()
			f.terminated = append(f.terminated, name)
			f.mu.Unlock()
		},
		Recorder: f,
		Metrics:  webhook.NewMetrics(f.reg, true),
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Instance: "test-0",
	}
	return f
}

func review(apiVersion, uid, resource, op string, object string, dryRun bool) string {
	kind := map[string]string{"pods": "Pod", "namespaces": "Namespace"}[resource]
	name := "x"
	if resource == "namespaces" {
		name = "team-a"
	}
	m := map[string]any{
		"apiVersion": apiVersion, "kind": "AdmissionReview",
		"request": map[string]any{
			"uid":       uid,
			"kind":      map[string]string{"group": "", "version": "v1", "kind": kind},
			"resource":  map[string]string{"group": "", "version": "v1", "resource": resource},
			"name":      name,
			"operation": op,
			"userInfo":  map[string]any{"username": "alice", "groups": []string{"dev"}},
			"object":    json.RawMessage(object),
			"dryRun":    dryRun,
		},
	}
	if resource == "pods" {
		m["request"].(map[string]any)["namespace"] = "default"
	}
	b, _ := json.Marshal(m)
	return string(b)
}

const (
	goodPod   = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","labels":{"team":"a"}},"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}`
	latestPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","labels":{"team":"a"}},"spec":{"containers":[{"name":"c","image":"nginx:latest"}]}}`
	badPod    = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}`
	goodNS    = `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a","labels":{"team":"a"}}}`
	badNS     = `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}}`
)

// check decodes an answer of the given version and runs the apiserver's own
// verifier on it, as every real apiserver does.
func check(t *testing.T, apiVersion string, uid types.UID, body []byte) *request.AdmissionResponse {
	t.Helper()
	return checkAs(t, apiVersion, uid, body, false)
}

// checkAs is check for a validating (mutating false) or mutating webhook:
// only a mutating one may send a patch.
func checkAs(t *testing.T, apiVersion string, uid types.UID, body []byte, mutating bool) *request.AdmissionResponse {
	t.Helper()
	var obj runtime.Object
	if apiVersion == "admission.k8s.io/v1" {
		r := &admissionv1.AdmissionReview{}
		if err := json.Unmarshal(body, r); err != nil {
			t.Fatal(err)
		}
		obj = r
	} else {
		r := &admissionv1beta1.AdmissionReview{}
		if err := json.Unmarshal(body, r); err != nil {
			t.Fatal(err)
		}
		obj = r
	}
	resp, err := request.VerifyAdmissionResponse(uid, mutating, obj)
	if err != nil {
		t.Fatalf("the apiserver would reject this answer: %v\n%s", err, body)
	}
	return resp
}

func TestHandler(t *testing.T) {
	const v1, v1beta1 = "admission.k8s.io/v1", "admission.k8s.io/v1beta1"
	tests := []struct {
		name        string
		method      string
		path        string // defaults to /t/acme/validate
		auth        string // defaults to "Bearer good"
		contentType string // defaults to application/json
		body        string
		// undeclared sends the body without Content-Length, as a chunked
		// HTTP/1.1 request or an HTTP/2 one without the header would.
		undeclared bool
		// wantUnread: refused on its declared length, before any byte
		// of the body is read.
		wantUnread bool
		wantCode   int
		wantInBody string
		// For 200 answers:
		apiVersion      string
		wantAllowed     bool
		wantStatusCode  int32
		wantWarnings    int
		wantAnnotations map[string]string
		wantRecorded    bool
		wantVerdict     decisions.Verdict
	}{
		{name: "allowed v1", body: review(v1, "u1", "pods", "CREATE", goodPod, false), wantCode: 200, apiVersion: v1, wantAllowed: true,
			wantAnnotations: map[string]string{"require-team.team": "a"}, wantRecorded: true, wantVerdict: decisions.VerdictAllowed},
		{name: "allowed v1beta1", body: review(v1beta1, "u2", "pods", "CREATE", goodPod, false), wantCode: 200, apiVersion: v1beta1, wantAllowed: true, wantRecorded: true, wantVerdict: decisions.VerdictAllowed},
		{name: "denied v1", body: review(v1, "u3", "pods", "CREATE", badPod, false), wantCode: 200, apiVersion: v1, wantStatusCode: 422,
			wantInBody: `ValidatingAdmissionPolicy 'require-team' with binding 'require-team' denied request: the team label is required`, wantRecorded: true, wantVerdict: decisions.VerdictDenied},
		{name: "denied v1beta1", body: review(v1beta1, "u4", "pods", "CREATE", badPod, false), wantCode: 200, apiVersion: v1beta1, wantStatusCode: 422, wantRecorded: true, wantVerdict: decisions.VerdictDenied},
		{name: "warn and audit", body: review(v1, "u5", "pods", "CREATE", latestPod, false), wantCode: 200, apiVersion: v1, wantAllowed: true, wantWarnings: 1,
			wantInBody:      `Validation failed for ValidatingAdmissionPolicy 'no-latest' with binding 'no-latest-warn': do not use :latest`,
			wantAnnotations: map[string]string{"require-team.team": "a", "validation_failure": ""}, wantRecorded: true, wantVerdict: decisions.VerdictWarned},
		{name: "GET", method: http.MethodGet, wantCode: 405, wantInBody: "send the AdmissionReview with POST"},
		{name: "no credential", auth: "-", body: review(v1, "u", "pods", "CREATE", goodPod, false), wantCode: 401, wantInBody: "unauthenticated"},
		{name: "another tenant's credential", auth: "Bearer other-tenant", body: review(v1, "u", "pods", "CREATE", goodPod, false), wantCode: 403, wantInBody: "forbidden"},
		{name: "wrong content type", contentType: "text/plain", body: review(v1, "u", "pods", "CREATE", goodPod, false), wantCode: 415, wantInBody: `Content-Type \"text/plain\" is not supported`, wantRecorded: true, wantVerdict: decisions.VerdictRejected},
		{name: "json with charset", contentType: "application/json; charset=utf-8", body: review(v1, "u6", "pods", "CREATE", goodPod, false), wantCode: 200, apiVersion: v1, wantAllowed: true, wantRecorded: true, wantVerdict: decisions.VerdictAllowed},
		{name: "too large", body: `{"apiVersion":"admission.k8s.io/v1","pad":"` + strings.Repeat("x", 9<<20) + `"}`, wantUnread: true, wantCode: 413, wantInBody: "larger than 8388608 bytes", wantRecorded: true, wantVerdict: decisions.VerdictRejected},
		{name: "too large, length not declared", undeclared: true, body: `{"apiVersion":"admission.k8s.io/v1","pad":"` + strings.Repeat("x", 9<<20) + `"}`, wantCode: 413, wantInBody: "larger than 8388608 bytes", wantRecorded: true, wantVerdict: decisions.VerdictRejected},
		{name: "allowed, length not declared", undeclared: true, body: review(v1, "u7", "pods", "CREATE", goodPod, false), wantCode: 200, apiVersion: v1, wantAllowed: true,
			wantAnnotations: map[string]string{"require-team.team": "a"}, wantRecorded: true, wantVerdict: decisions.VerdictAllowed},
		{name: "malformed JSON", body: `{"apiVersion":`, wantCode: 400, wantInBody: "not a valid AdmissionReview JSON", wantRecorded: true, wantVerdict: decisions.VerdictRejected},
		{name: "missing request", body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, wantCode: 400, wantInBody: "has no request", wantRecorded: true, wantVerdict: decisions.VerdictRejected},
		{name: "missing uid", body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE"}}`, wantCode: 400, wantInBody: "request.uid is missing", wantRecorded: true, wantVerdict: decisions.VerdictRejected},
		{name: "unknown version", body: `{"apiVersion":"admission.k8s.io/v2","kind":"AdmissionReview","request":{"uid":"u"}}`, wantCode: 400, wantInBody: `unsupported AdmissionReview apiVersion \"admission.k8s.io/v2\"`, wantRecorded: true, wantVerdict: decisions.VerdictRejected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			method, path, ct := tt.method, tt.path, tt.contentType
			if method == "" {
				method = http.MethodPost
			}
			if path == "" {
				path = "/t/acme/validate?timeout=10s"
			}
			if ct == "" {
				ct = "application/json"
			}
			src := strings.NewReader(tt.body)
			req := httptest.NewRequest(method, path, src)
			if tt.undeclared {
				req.ContentLength = -1
			}
			req.Header.Set("Content-Type", ct)
			switch tt.auth {
			case "":
				req.Header.Set("Authorization", "Bearer good")
			case "-":
			default:
				req.Header.Set("Authorization", tt.auth)
			}
			rec := httptest.NewRecorder()
			f.h.ServeHTTP(rec, req)
			if tt.wantUnread && src.Len() != len(tt.body) {
				t.Errorf("%d bytes of the body were read, want none", len(tt.body)-src.Len())
			}
			body := rec.Body.Bytes()
			if rec.Code != tt.wantCode {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.wantCode, body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
			if tt.wantInBody != "" && !bytes.Contains(body, []byte(tt.wantInBody)) {
				t.Fatalf("body lacks %q:\n%s", tt.wantInBody, body)
			}
			if rec.Code == 200 {
				var uid struct {
					Request struct{ UID types.UID }
				}
				_ = json.Unmarshal([]byte(tt.body), &uid)
				resp := check(t, tt.apiVersion, uid.Request.UID, body)
				if resp.Allowed != tt.wantAllowed || len(resp.Warnings) != tt.wantWarnings {
					t.Fatalf("allowed=%v warnings=%q", resp.Allowed, resp.Warnings)
				}
				if !bytes.Contains(body, []byte(`"apiVersion":"`+tt.apiVersion+`"`)) {
					t.Fatalf("answer not in %s: %s", tt.apiVersion, body)
				}
				if !tt.wantAllowed && (resp.Result == nil || resp.Result.Code != tt.wantStatusCode) {
					t.Fatalf("status = %+v, want code %d", resp.Result, tt.wantStatusCode)
				}
				for k, v := range tt.wantAnnotations {
					got, ok := resp.AuditAnnotations[k]
					if !ok || (v != "" && got != v) {
						t.Fatalf("audit annotation %q = %q (present %v), want %q; all: %v", k, got, ok, v, resp.AuditAnnotations)
					}
				}
			} else {
				var st struct{ Kind, Message string }
				if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" || st.Message == "" {
					t.Fatalf("error body is not a Status with a message: %s", body)
				}
			}
			if got := len(f.recorded); (got == 1) != tt.wantRecorded || got > 1 {
				t.Fatalf("%d decisions recorded", got)
			}
			if tt.wantRecorded {
				d := f.recorded[0]
				if d.Verdict != tt.wantVerdict || d.HTTPStatus != tt.wantCode || d.TenantName != "acme" || d.ClusterName != "prod" || d.Instance != "test-0" || d.ID == "" {
					t.Fatalf("decision %+v", d)
				}
				if rec.Code == 200 && (d.SnapshotVersion != 42 || d.UserName != "alice" || d.Resource != "pods") {
					t.Fatalf("decision %+v", d)
				}
			}
		})
	}
}

func TestAuditAnnotationsKeepOriginalKeysInDecision(t *testing.T) {
	f := newFixture(t)
	req := httptest.NewRequest(http.MethodPost, "/t/acme/validate", strings.NewReader(review("admission.k8s.io/v1", "u", "pods", "CREATE", latestPod, false)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer good")
	f.h.ServeHTTP(httptest.NewRecorder(), req)
	keys := map[string]bool{}
	for _, a := range f.recorded[0].AuditAnnotations {
		keys[a.Key] = true
	}
	if !keys["require-team/team"] || !keys["validation.policy.admission.k8s.io/validation_failure"] {
		t.Fatalf("decision keys %v, want the plugin's", keys)
	}
}

func TestNamespaceLearning(t *testing.T) {
	tests := []struct {
		name           string
		op, object     string
		old            string // the request's oldObject, when set
		dryRun         bool
		wantLearned    int // provisional
		wantCommitted  int
		wantTerminated int
		urlSecret      bool // authenticated by a URL secret only
	}{
		{"allowed create is provisional", "CREATE", goodNS, "", false, 1, 0, 0, false},
		{"allowed update is provisional", "UPDATE", goodNS, "", false, 1, 0, 0, false},
		{"the oldObject of an update is committed", "UPDATE", goodNS, badNS, false, 1, 1, 0, false},
		{"denied update never changes the inventory", "UPDATE", badNS, "", false, 0, 0, 0, false},
		{"a denied update's oldObject is still committed", "UPDATE", badNS, goodNS, false, 0, 1, 0, false},
		{"dry run never changes the inventory", "CREATE", goodNS, "", true, 0, 0, 0, false},
		{"a dry run's oldObject is still committed", "UPDATE", goodNS, goodNS, true, 0, 1, 0, false},
		{"delete marks terminating", "DELETE", `null`, "", false, 0, 0, 1, false},
		{"delete commits its oldObject", "DELETE", `null`, goodNS, false, 0, 1, 1, false},
		{"dry-run delete", "DELETE", `null`, "", true, 0, 0, 0, false},
		// Issue 30, finding 2: a URL secret's holder may propose (which
		// only tightens), never commit.
		{"url secret: an update proposes, its oldObject commits nothing", "UPDATE", goodNS, badNS, false, 1, 0, 0, true},
		{"url secret: a denied update's oldObject commits nothing", "UPDATE", badNS, goodNS, false, 0, 0, 0, true},
		{"url secret: a delete marks nothing terminating", "DELETE", `null`, goodNS, false, 0, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			body := review("admission.k8s.io/v1", "u", "namespaces", tt.op, tt.object, tt.dryRun)
			if tt.old != "" {
				var m map[string]any
				_ = json.Unmarshal([]byte(body), &m)
				m["request"].(map[string]any)["oldObject"] = json.RawMessage(tt.old)
				b, _ := json.Marshal(m)
				body = string(b)
			}
			req := httptest.NewRequest(http.MethodPost, "/t/acme/validate", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer good")
			if tt.urlSecret {
				req.Header.Set("Authorization", "Bearer url-secret")
			}
			rec := httptest.NewRecorder()
			f.h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			if len(f.learned) != tt.wantLearned || len(f.committed) != tt.wantCommitted || len(f.terminated) != tt.wantTerminated {
				t.Fatalf("learned %v committed %v terminated %v", f.learned, f.committed, f.terminated)
			}
			if tt.wantLearned == 1 && f.learned[0] != "team-a" {
				t.Fatalf("learned %v", f.learned)
			}
			if f.recorded[0].DryRun != tt.dryRun {
				t.Fatal("decision does not flag the dry run")
			}
		})
	}
}

func TestColdAndUnreachableAnswers503(t *testing.T) {
	f := newFixture(t)
	f.h.Snapshot = func(ctx context.Context, tenantID int64) (*policystore.Snapshot, error) {
		return nil, &fault.Error{Code: fault.Unavailable, Message: "down", Err: errors.New("connection refused")}
	}
	req := httptest.NewRequest(http.MethodPost, "/t/acme/validate", strings.NewReader(review("admission.k8s.io/v1", "u", "pods", "CREATE", goodPod, false)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer good")
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), "failurePolicy") || strings.Contains(rec.Body.String(), "connection refused") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if got := testutil.ToFloat64(f.h.Metrics.ColdUnavailable()); got != 1 {
		t.Fatalf("cold-unavailable metric = %v", got)
	}
	if len(f.recorded) != 1 || f.recorded[0].Verdict != decisions.VerdictError {
		t.Fatalf("decisions %+v", f.recorded)
	}
}

// A deployment that answers for some tenants only refuses the others with
// 421 before authenticating anything, the same whether the tenant exists;
// the tenants it serves are answered as usual, over both URL forms.
func TestTenantOfAnotherDeploymentAnswers421(t *testing.T) {
	f := newFixture(t)
	f.h.Serves = func(tenant string) bool { return tenant == "acme" }
	auth := f.h.Authenticate
	calls := 0
	f.h.Authenticate = func(r *http.Request) (tenancy.Identity, error) {
		calls++
		return auth(r)
	}
	send := func(path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(review("admission.k8s.io/v1", "u", "pods", "CREATE", goodPod, false)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer good")
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		return rec
	}
	for _, path := range []string{"/t/noisy/validate", "/t/no-such-tenant/validate", "/t/noisy/k/c2VjcmV0/validate"} {
		rec := send(path)
		if rec.Code != http.StatusMisdirectedRequest || !strings.Contains(rec.Body.String(), `"kind":"Status"`) ||
			!strings.Contains(rec.Body.String(), "does not answer for tenant") || strings.Contains(rec.Body.String(), "c2VjcmV0") {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
	if calls != 0 || len(f.recorded) != 0 {
		t.Fatalf("misdirected requests were authenticated (%d) or recorded (%d)", calls, len(f.recorded))
	}
	if got := testutil.ToFloat64(f.h.Metrics.Misdirected()); got != 3 {
		t.Fatalf("misdirected metric = %v", got)
	}
	for _, path := range []string{"/t/acme/validate", "/t/acme/k/c2VjcmV0/validate"} {
		if rec := send(path); rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
	if calls != 2 {
		t.Fatalf("served tenant authenticated %d times, want 2", calls)
	}
}

// A full basic-auth queue is a 429 with Retry-After, as every limit of the
// gateway answers; the webhook's failurePolicy decides.
func TestAuthenticationBusyAnswers429WithRetryAfter(t *testing.T) {
	f := newFixture(t)
	f.h.Authenticate = func(*http.Request) (tenancy.Identity, error) {
		return tenancy.Identity{}, &fault.Error{Code: fault.TooManyRequests, Message: "busy", Reason: "basic-auth queue full: tenant"}
	}
	req := httptest.NewRequest(http.MethodPost, "/t/acme/validate", strings.NewReader(review("admission.k8s.io/v1", "u", "pods", "CREATE", goodPod, false)))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	if rec.Code != 429 || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), `"kind":"Status"`) {
		t.Fatalf("%d %v %s", rec.Code, rec.Header(), rec.Body)
	}
}

func TestPanicIsRecovered(t *testing.T) {
	f := newFixture(t)
	calls := 0
	f.h.Snapshot = func(ctx context.Context, tenantID int64) (*policystore.Snapshot, error) {
		calls++
		if calls == 1 {
			panic("boom")
		}
		return &policystore.Snapshot{TenantID: 7, Version: 1, Compiled: compile(t)}, nil
	}
	do := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/t/acme/validate", strings.NewReader(review("admission.k8s.io/v1", "u", "pods", "CREATE", goodPod, false)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer good")
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		return rec
	}
	if rec := do(); rec.Code != 500 || !strings.Contains(rec.Body.String(), "internal error") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if got := testutil.ToFloat64(f.h.Metrics.Panics()); got != 1 {
		t.Fatalf("panics metric = %v", got)
	}
	if rec := do(); rec.Code != 200 {
		t.Fatalf("the next request: %d %s", rec.Code, rec.Body)
	}
	if len(f.recorded) != 2 || f.recorded[0].HTTPStatus != 500 {
		t.Fatalf("decisions %+v", f.recorded)
	}
}

// When the apiserver's timeout leaves no time to evaluate, each binding
// follows its failurePolicy: require-team (Fail) denies, and the decision
// says it timed out.
func TestDeadlineAppliesFailurePolicy(t *testing.T) {
	f := newFixture(t)
	req := httptest.NewRequest(http.MethodPost, "/t/acme/validate?timeout=1ms", strings.NewReader(review("admission.k8s.io/v1", "u", "pods", "CREATE", goodPod, false)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer good")
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	resp := check(t, "admission.k8s.io/v1", "u", rec.Body.Bytes())
	if resp.Allowed {
		t.Fatalf("allowed after the deadline passed: %s", rec.Body)
	}
	d := f.recorded[0]
	if !d.TimedOut || d.Verdict != decisions.VerdictDenied {
		t.Fatalf("decision %+v", d)
	}
}

// A panic after the answer is written (here, in namespace learning) must
// leave that answer intact: appending an error body would make the
// apiserver fail the call. The decision records what was answered.
func TestPanicAfterTheAnswerKeepsIt(t *testing.T) {
	f := newFixture(t)
	f.h.Observe = func(tenantID, clusterID int64, committed, provisional *corev1.Namespace) { panic("boom") }
	req := httptest.NewRequest(http.MethodPost, "/t/acme/validate", strings.NewReader(review("admission.k8s.io/v1", "u", "namespaces", "CREATE", goodNS, false)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer good")
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	var rev admissionv1.AdmissionReview
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &rev) != nil || rev.Response == nil || !rev.Response.Allowed {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if got := testutil.ToFloat64(f.h.Metrics.Panics()); got != 1 {
		t.Fatalf("panics metric = %v", got)
	}
	if len(f.recorded) != 1 || f.recorded[0].Verdict != decisions.VerdictAllowed || f.recorded[0].HTTPStatus != 200 {
		t.Fatalf("decisions %+v", f.recorded)
	}
}

// The apiserver never waits more than 30 s for a webhook (its
// timeoutSeconds is at most 30), so a larger ?timeout is a caller's
// invention: the evaluation budget is capped at 30 s minus the margin, and
// a request cannot hold a tenant's evaluation slot longer than the
// apiserver would wait for its answer (issue 30, finding 9).
func TestTimeoutCappedAtTheAPIServersMaximum(t *testing.T) {
	for _, tt := range []struct {
		name, query string
		budget      time.Duration
	}{
		{"none: the webhook default", "", 9 * time.Second},
		{"within the maximum", "?timeout=5s", 4500 * time.Millisecond},
		{"the maximum", "?timeout=30s", 27 * time.Second},
		{"an hour", "?timeout=1h", 27 * time.Second},
		{"larger than a Duration can say", "?timeout=99999999999h", 9 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			snap := f.h.Snapshot
			var left time.Duration
			f.h.Snapshot = func(ctx context.Context, tenantID int64) (*policystore.Snapshot, error) {
				dl, ok := ctx.Deadline()
				if !ok {
					t.Error("no deadline")
				}
				left = time.Until(dl)
				return snap(ctx, tenantID)
			}
			req := httptest.NewRequest(http.MethodPost, "/t/acme/validate"+tt.query, strings.NewReader(review("admission.k8s.io/v1", "u", "pods", "CREATE", goodPod, false)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer good")
			rec := httptest.NewRecorder()
			f.h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			if left > tt.budget || left < tt.budget-time.Second {
				t.Fatalf("evaluation budget %v, want %v", left, tt.budget)
			}
		})
	}
}
