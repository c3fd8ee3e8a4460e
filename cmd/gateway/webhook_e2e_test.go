package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/request"

	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// captured collects decisions.
type captured struct {
	mu sync.Mutex
	ds []*decisions.Decision
}

func (c *captured) Record(d *decisions.Decision) { c.mu.Lock(); c.ds = append(c.ds, d); c.mu.Unlock() }

func (c *captured) byUID(uid string) []*decisions.Decision {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*decisions.Decision
	for _, d := range c.ds {
		if d.UID == uid {
			out = append(out, d)
		}
	}
	return out
}

const e2ePolicies = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: require-team}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["pods"]}
  validations:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
    message: "the team label is required"
    reason: Forbidden
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
metadata: {name: prod-no-latest}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
  validations:
  - expression: "object.spec.containers.all(c, !c.image.endsWith(':latest'))"
    message: "no :latest in production"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: prod-no-latest}
spec:
  policyName: prod-no-latest
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {env: prod}
`

type e2e struct {
	t       *testing.T
	m       *Main
	rec     *captured
	tenant  tenancy.Tenant
	cluster tenancy.Cluster
	token   string
	client  *http.Client
}

func applyAll(t *testing.T, m *Main, tenantID int64, docs string) {
	t.Helper()
	for _, doc := range strings.Split(docs, "\n---\n") {
		if _, err := m.Policies.Apply(context.Background(), tenantID, "test", []byte(doc)); err != nil {
			t.Fatalf("apply: %v\n%s", err, doc)
		}
	}
}

func newE2E(t *testing.T, dbURL string, mutate ...func(*Config)) *e2e {
	t.Helper()
	cfg := testConfig(t, dbURL)
	for _, f := range mutate {
		f(&cfg)
	}
	rec := &captured{}
	m := startMain(t, cfg, func(m *Main) { m.Recorder = rec })
	return &e2e{t: t, m: m, rec: rec, client: webhookClient(t, m, nil)}
}

// onboard creates tenant "acme" with cluster "prod" and a token, applies the
// policies, and waits until the gateway accepts the token.
func (e *e2e) onboard() {
	t, ctx := e.t, context.Background()
	var err error
	if e.tenant, err = e.m.Tenancy.CreateTenant(ctx, "acme", "Acme"); err != nil {
		t.Fatal(err)
	}
	if e.cluster, err = e.m.Tenancy.CreateCluster(ctx, e.tenant.ID, "prod", nil); err != nil {
		t.Fatal(err)
	}
	issued, err := e.m.Tenancy.CreateToken(ctx, e.tenant.ID, e.cluster.ID, tenancy.CredentialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.token = issued.Token
	applyAll(t, e.m, e.tenant.ID, e2ePolicies)
	// The cluster's existing namespaces are uploaded at onboarding.
	def := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"kubernetes.io/metadata.name": "default"}}}
	if err := e.m.Inventory.ReplaceNamespaces(ctx, e.tenant.ID, e.cluster.ID, []*corev1.Namespace{def}); err != nil {
		t.Fatal(err)
	}
	e.waitAccepted(e.client, e.token)
}

// waitAccepted waits until the webhook accepts the credential token, as
// it does once every replica has loaded it (after onboarding, an issue or
// a rotation).
func (e *e2e) waitAccepted(c *http.Client, token string) {
	e.t.Helper()
	var code int
	defer func() {
		if e.t.Failed() {
			e.t.Logf("the webhook's last answer: %d", code)
		}
	}()
	testutil.Eventually(e.t, 5*time.Second, "the webhook to accept the credential", func() bool {
		code, _ = e.post(c, "/t/acme/validate", token, "application/json", podReview("admission.k8s.io/v1", "probe", "default", goodPod, false))
		return code == 200
	})
}

func (e *e2e) post(c *http.Client, path, token, contentType, body string) (int, []byte) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.m.WebhookURL()+path, strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", "kube-apiserver-admission")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.ProtoMajor != 2 {
		e.t.Fatalf("served over %s, want HTTP/2", resp.Proto)
	}
	return resp.StatusCode, b
}

const (
	goodPod   = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"team":"a"}},"spec":{"containers":[{"name":"c","image":"nginx:latest"}]}}`
	noTeamPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}`
)

func podReview(apiVersion, uid, namespace, object string, dryRun bool) string {
	return review(apiVersion, uid, "pods", "Pod", namespace, "web", "CREATE", object, dryRun)
}

func review(apiVersion, uid, resource, kind, namespace, name, op, object string, dryRun bool) string {
	return fmt.Sprintf(`{"apiVersion":%q,"kind":"AdmissionReview","request":{"uid":%q,
	  "kind":{"group":"","version":"v1","kind":%q},"resource":{"group":"","version":"v1","resource":%q},
	  "requestKind":{"group":"","version":"v1","kind":%q},"requestResource":{"group":"","version":"v1","resource":%q},
	  "namespace":%q,"name":%q,"operation":%q,"userInfo":{"username":"system:serviceaccount:kube-system:replicaset-controller"},
	  "object":%s,"dryRun":%t,"options":{"apiVersion":"meta.k8s.io/v1","kind":"CreateOptions"}}}`,
		apiVersion, uid, kind, resource, kind, resource, namespace, name, op, object, dryRun)
}

// verify runs the apiserver's own check of a webhook's answer.
func verify(t *testing.T, apiVersion string, uid string, body []byte) *request.AdmissionResponse {
	t.Helper()
	var obj runtime.Object = &admissionv1.AdmissionReview{}
	if apiVersion == "admission.k8s.io/v1beta1" {
		obj = &admissionv1beta1.AdmissionReview{}
	}
	if err := json.Unmarshal(body, obj); err != nil {
		t.Fatalf("answer is not an AdmissionReview: %v\n%s", err, body)
	}
	resp, err := request.VerifyAdmissionResponse(types.UID(uid), false, obj)
	if err != nil {
		t.Fatalf("the apiserver would reject the answer: %v\n%s", err, body)
	}
	return resp
}

func TestWebhookOverHTTPS(t *testing.T) {
	e := newE2E(t, pgtest.URL(t), func(c *Config) { c.MaxRequestBytes = 64 << 10 })
	e.onboard()
	const v1, v1beta1 = "admission.k8s.io/v1", "admission.k8s.io/v1beta1"
	tests := []struct {
		name, path, token, contentType, body string
		wantCode                             int
		wantBody                             string
		apiVersion                           string // for 200s
		wantAllowed                          bool
	}{
		{name: "v1 allowed", body: podReview(v1, "a1", "default", goodPod, false), wantCode: 200, apiVersion: v1, wantAllowed: true},
		{name: "v1 denied", body: podReview(v1, "a2", "default", noTeamPod, false), wantCode: 200, apiVersion: v1,
			wantBody: `pods \"web\" is forbidden: ValidatingAdmissionPolicy 'require-team' with binding 'require-team' denied request: the team label is required`},
		{name: "v1beta1 allowed", body: podReview(v1beta1, "a3", "default", goodPod, false), wantCode: 200, apiVersion: v1beta1, wantAllowed: true},
		{name: "v1beta1 denied", body: podReview(v1beta1, "a4", "default", noTeamPod, false), wantCode: 200, apiVersion: v1beta1, wantBody: `"code":403`},
		{name: "dry run", body: podReview(v1, "a5", "default", noTeamPod, true), wantCode: 200, apiVersion: v1},
		{name: "no credential", token: "-", body: podReview(v1, "b1", "default", goodPod, false), wantCode: 401},
		{name: "unknown token", token: tenancy.TokenPrefix + strings.Repeat("a", 52), body: podReview(v1, "b2", "default", goodPod, false), wantCode: 401},
		{name: "another tenant's path", path: "/t/globex/validate", body: podReview(v1, "b3", "default", goodPod, false), wantCode: 403},
		{name: "wrong content type", contentType: "application/yaml", body: podReview(v1, "c1", "default", goodPod, false), wantCode: 415, wantBody: "send application/json"},
		{name: "too large", body: `{"pad":"` + strings.Repeat("x", 70<<10) + `"}`, wantCode: 413, wantBody: "larger than 65536 bytes"},
		{name: "malformed JSON", body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":`, wantCode: 400, wantBody: "not a valid AdmissionReview JSON"},
		{name: "missing request", body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, wantCode: 400, wantBody: "has no request"},
		{name: "missing uid", body: strings.Replace(podReview(v1, "", "default", goodPod, false), `"uid":"",`, "", 1), wantCode: 400, wantBody: "request.uid is missing"},
		{name: "unknown version", body: podReview("admission.k8s.io/v1alpha1", "c2", "default", goodPod, false), wantCode: 400, wantBody: "unsupported AdmissionReview apiVersion"},
		// The mutating endpoint is routed next to it, through the same
		// authentication and decoding; with no mutating policy nothing
		// changes, and what validation would deny is not its business.
		{name: "mutate, nothing to change", path: "/t/acme/mutate?timeout=10s", body: podReview(v1, "m1", "default", noTeamPod, false), wantCode: 200, apiVersion: v1, wantAllowed: true},
		{name: "mutate v1beta1", path: "/t/acme/mutate", body: podReview(v1beta1, "m2", "default", goodPod, false), wantCode: 200, apiVersion: v1beta1, wantAllowed: true},
		{name: "mutate, another tenant's path", path: "/t/globex/mutate", body: podReview(v1, "m3", "default", goodPod, false), wantCode: 403},
		{name: "mutate, malformed JSON", path: "/t/acme/mutate", body: `{"apiVersion":`, wantCode: 400, wantBody: "not a valid AdmissionReview JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, token, ct := tt.path, tt.token, tt.contentType
			if path == "" {
				path = "/t/acme/validate?timeout=10s"
			}
			switch token {
			case "":
				token = e.token
			case "-":
				token = ""
			}
			if ct == "" {
				ct = "application/json"
			}
			code, body := e.post(e.client, path, token, ct, tt.body)
			if code != tt.wantCode || !bytes.Contains(body, []byte(tt.wantBody)) {
				t.Fatalf("%d %s; want %d with %q", code, body, tt.wantCode, tt.wantBody)
			}
			if code != 200 {
				var st struct{ Kind, Message string }
				if json.Unmarshal(body, &st) != nil || st.Kind != "Status" || st.Message == "" {
					t.Fatalf("error answer is not a Status with a message: %s", body)
				}
				return
			}
			var uid struct{ Request struct{ UID string } }
			_ = json.Unmarshal([]byte(tt.body), &uid)
			resp := verify(t, tt.apiVersion, uid.Request.UID, body)
			if resp.Allowed != tt.wantAllowed {
				t.Fatalf("allowed = %v: %s", resp.Allowed, body)
			}
			ds := e.rec.byUID(uid.Request.UID)
			if len(ds) != 1 {
				t.Fatalf("%d decisions for uid %s", len(ds), uid.Request.UID)
			}
			if ds[0].DryRun != strings.Contains(tt.body, `"dryRun":true`) || ds[0].ClusterName != "prod" || ds[0].SnapshotVersion == 0 {
				t.Fatalf("decision %+v", ds[0])
			}
		})
	}

	// A client certificate issued by the gateway's client CA works too.
	issued, err := e.m.Tenancy.IssueCertificate(context.Background(), e.tenant.ID, e.cluster.ID, tenancy.CredentialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(issued.CertificatePEM, issued.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	certClient := webhookClient(t, e.m, &pair)
	e.waitAccepted(certClient, "")
}

// A policy whose CEL runs for seconds is cut off at the apiserver's timeout
// minus the margin: the Fail policy denies, in time, and the decision says
// it timed out.
func TestWebhookDeadline(t *testing.T) {
	e := newE2E(t, pgtest.URL(t))
	e.onboard()
	var slow strings.Builder
	slow.WriteString(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: slow}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
  validations:
`)
	for range 10 {
		slow.WriteString(`  - expression: "[0,1,2,3,4,5,6,7,8,9].all(a, [0,1,2,3,4,5,6,7,8,9].all(b, [0,1,2,3,4,5,6,7,8,9].all(c, [0,1,2,3,4,5,6,7,8,9].all(d, [0,1,2,3,4,5,6,7,8,9].all(e, a+b+c+d+e >= 0)))))"` + "\n")
	}
	applyAll(t, e.m, e.tenant.ID, slow.String()+`
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: slow}
spec: {policyName: slow, validationActions: [Deny]}`)
	// Wait until the slow policy is in force (its evaluation takes seconds).
	var resp *request.AdmissionResponse
	var body []byte
	var took time.Duration
	defer func() {
		if t.Failed() {
			t.Logf("last answer %s after %s", body, took)
		}
	}()
	testutil.Eventually(t, 5*time.Second, "the slow policy to take effect", func() bool {
		start := time.Now()
		var code int
		code, body = e.post(e.client, "/t/acme/validate?timeout=300ms", e.token, "application/json", podReview("admission.k8s.io/v1", "slow-1", "default", goodPod, false))
		took = time.Since(start)
		if code != 200 {
			t.Fatalf("%d %s", code, body)
		}
		resp = verify(t, "admission.k8s.io/v1", "slow-1", body)
		return !resp.Allowed
	})
	if took > 1500*time.Millisecond {
		t.Fatalf("answered after %s, past the apiserver's 300ms timeout", took)
	}
	if !strings.Contains(resp.Result.Message, "did not finish") {
		t.Fatalf("message %q does not say the evaluation was cut off", resp.Result.Message)
	}
	ds := e.rec.byUID("slow-1")
	last := ds[len(ds)-1]
	if !last.TimedOut || last.Verdict != decisions.VerdictDenied {
		t.Fatalf("decision %+v", last)
	}
}

// Namespaces are learned from allowed Namespace requests: before the gateway
// knows "shop", a binding that selects namespaces by label cannot decide and
// its failurePolicy (Fail) denies, naming the namespace; once an allowed
// CREATE taught the gateway env=prod, the binding applies.
func TestWebhookLearnsNamespaces(t *testing.T) {
	e := newE2E(t, pgtest.URL(t))
	e.onboard()
	const v1 = "admission.k8s.io/v1"
	code, body := e.post(e.client, "/t/acme/validate", e.token, "application/json", podReview(v1, "n1", "shop", goodPod, false))
	resp := verify(t, v1, "n1", body)
	if code != 200 || resp.Allowed || !strings.Contains(resp.Result.Message, "shop") {
		t.Fatalf("unknown namespace: %d %s", code, body)
	}
	if ds := e.rec.byUID("n1"); len(ds) != 1 || ds[0].UnknownNamespace != "shop" {
		t.Fatalf("decision does not name the unknown namespace: %+v", ds)
	}
	ns := `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop","uid":"5f0c","labels":{"env":"prod","kubernetes.io/metadata.name":"shop"}},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}}`
	// A dry run teaches nothing.
	e.post(e.client, "/t/acme/validate", e.token, "application/json", review(v1, "n2", "namespaces", "Namespace", "", "shop", "CREATE", ns, true))
	_, body = e.post(e.client, "/t/acme/validate", e.token, "application/json", podReview(v1, "n3", "shop", goodPod, false))
	if verify(t, v1, "n3", body).Allowed {
		t.Fatal("a dry-run Namespace CREATE changed the inventory")
	}
	_, body = e.post(e.client, "/t/acme/validate", e.token, "application/json", review(v1, "n4", "namespaces", "Namespace", "", "shop", "CREATE", ns, false))
	if !verify(t, v1, "n4", body).Allowed {
		t.Fatalf("namespace CREATE denied: %s", body)
	}
	// Now the namespace is known: env=prod selects prod-no-latest, which
	// denies the :latest image (and no longer for lack of the namespace).
	_, body = e.post(e.client, "/t/acme/validate", e.token, "application/json", podReview(v1, "n5", "shop", goodPod, false))
	resp = verify(t, v1, "n5", body)
	if resp.Allowed || !strings.Contains(resp.Result.Message, "no :latest in production") {
		t.Fatalf("after learning: %s", body)
	}
	fixed := strings.Replace(goodPod, "nginx:latest", "nginx:1.27", 1)
	_, body = e.post(e.client, "/t/acme/validate", e.token, "application/json", podReview(v1, "n6", "shop", fixed, false))
	if !verify(t, v1, "n6", body).Allowed {
		t.Fatalf("a good pod in a known namespace: %s", body)
	}
}

// A policy written through replica A is enforced by replica B within 1 s.
func TestPolicyWritePropagatesAcrossReplicas(t *testing.T) {
	dbURL := pgtest.URL(t)
	a := newE2E(t, dbURL)
	a.onboard()
	b := newE2E(t, dbURL)
	b.tenant, b.cluster, b.token = a.tenant, a.cluster, a.token
	b.waitAccepted(b.client, b.token)

	const v1 = "admission.k8s.io/v1"
	_, body := b.post(b.client, "/t/acme/validate", b.token, "application/json", podReview(v1, "p0", "default", goodPod, false))
	if !verify(t, v1, "p0", body).Allowed {
		t.Fatalf("before the write: %s", body)
	}
	applyAll(t, a.m, a.tenant.ID, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-latest-everywhere}
spec:
  policyName: prod-no-latest
  validationActions: [Deny]`)
	written := time.Now()
	i := 0
	testutil.Eventually(t, 3*time.Second, "replica B to enforce the write made on A", func() bool {
		i++
		uid := fmt.Sprintf("p%d", i)
		_, body := b.post(b.client, "/t/acme/validate", b.token, "application/json", podReview(v1, uid, "default", goodPod, false))
		return !verify(t, v1, uid, body).Allowed
	})
	if took := time.Since(written); took > time.Second {
		t.Fatalf("replica B enforced the write after %s, want within 1s", took)
	}
}
