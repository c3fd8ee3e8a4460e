package ui

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/portcullis-dev/portcullis/internal/decisions"
)

// policyYAML is a policy and its binding that deny Pods labelled
// bad=true, with an attacker-controlled message.
const policyYAML = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: no-bad
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["pods"]
  validations:
  - expression: "object.metadata.?labels.?bad.orValue('') != 'true'"
    message: "<script>alert(1)</script> bad pods are refused"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: no-bad
spec:
  policyName: no-bad
  validationActions: [Deny]
`

const badPodReview = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
"uid":"1","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
"namespace":"default","operation":"CREATE","userInfo":{"username":"mallory"},
"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default","labels":{"bad":"true"}},
"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`

func mustStatus(t *testing.T, what string, code, want int, body string) {
	t.Helper()
	if code != want {
		t.Fatalf("%s = %d, want %d:\n%s", what, code, want, body)
	}
	if want == http.StatusOK && strings.Contains(body, "<html") && h1s(body) != 1 {
		t.Fatalf("%s: %d <h1> elements, want 1", what, h1s(body))
	}
}

// TestOperatorWalk goes through every page as an operator: tenants,
// onboarding a cluster and its files, editing a policy with an error, its
// history, diff and rollback, a test run, decisions and the audit log.
func TestOperatorWalk(t *testing.T) {
	e := newEnv(t)
	b := e.signIn(e.operator)

	code, page := b.get("/ui/tenants")
	mustStatus(t, "tenants", code, 200, page)
	for _, want := range []string{">Tenants</a>", ">Clusters</a>", ">Policies</a>", ">Decisions</a>", ">Audit</a>", "Tenant A"} {
		if !strings.Contains(page, want) {
			t.Errorf("tenants page lacks %q", want)
		}
	}
	code, page = b.post("/ui/tenants", url.Values{"name": {"c"}, "displayName": {"Tenant C"}})
	mustStatus(t, "create tenant", code, 303, page)
	if _, page = b.get("/ui/tenants"); !strings.Contains(page, "Tenant c created.") || !strings.Contains(page, "Tenant C") {
		t.Errorf("tenant c not listed after create:\n%s", page)
	}
	if _, page = b.get("/ui/tenants?counts=1"); !strings.Contains(page, `<td><a href="/ui/t/c/decisions">0</a></td>`) ||
		strings.Contains(page, "hx-get") {
		t.Errorf("tenants with counts:\n%s", page)
	}
	for _, nav := range []string{"/ui/clusters", "/ui/policies"} {
		code, page = b.get(nav)
		mustStatus(t, nav, code, 200, page)
		if !strings.Contains(page, `href="/ui/t/a/`) {
			t.Errorf("%s does not offer tenant a", nav)
		}
	}

	// Onboarding.
	code, page = b.get("/ui/t/a/clusters/new")
	mustStatus(t, "new cluster", code, 200, page)
	code, page = b.post("/ui/t/a/clusters", url.Values{"name": {"prod"}, "auth": {"token"}, "labels": {"env=prod"}})
	mustStatus(t, "create cluster", code, 200, page)
	imp := strings.Index(page, "admin namespaces import --tenant a --cluster prod")
	if imp < 0 || imp > strings.Index(page, "kubectl apply -f webhooks.yaml") {
		t.Error("onboarding does not start with the namespaces import")
	}
	res, kubeconfig := b.getRes("/ui/t/a/clusters/prod/files/kubeconfig.yaml")
	if res.StatusCode != 200 || !strings.Contains(res.Header.Get("Content-Disposition"), `attachment; filename="kubeconfig.yaml"`) ||
		!strings.Contains(kubeconfig, "token:") {
		t.Fatalf("kubeconfig download = %d %q:\n%s", res.StatusCode, res.Header.Get("Content-Disposition"), kubeconfig)
	}
	for _, f := range []string{"admission-configuration.yaml", "webhooks.yaml"} {
		if code, body := b.get("/ui/t/a/clusters/prod/files/" + f); code != 200 || !strings.Contains(body, "apiVersion") {
			t.Errorf("download %s = %d", f, code)
		}
	}
	code, page = b.get("/ui/t/a/clusters")
	mustStatus(t, "clusters", code, 200, page)
	if !strings.Contains(page, "prod") || !strings.Contains(page, "env=prod") || !strings.Contains(page, "Rotate") {
		t.Errorf("clusters page:\n%s", page)
	}
	id := regexp.MustCompile(`/credentials/(\d+)/rotate`).FindStringSubmatch(page)
	if id == nil {
		t.Fatal("no rotate form")
	}
	// Without JavaScript's dialog, the server asks first and changes
	// nothing.
	code, page = b.post("/ui/t/a/clusters/prod/credentials/"+id[1]+"/revoke", nil)
	mustStatus(t, "revoke unconfirmed", code, 200, page)
	if !strings.Contains(page, "Revoke credential "+id[1]+" of cluster prod?") || !strings.Contains(page, `name="confirmed" value="yes"`) {
		t.Errorf("revoke without confirmation:\n%s", page)
	}
	if _, page = b.get("/ui/t/a/clusters"); !strings.Contains(page, "/credentials/"+id[1]+"/revoke") {
		t.Errorf("an unconfirmed revoke revoked:\n%s", page)
	}
	code, page = b.post("/ui/t/a/clusters/prod/credentials/"+id[1]+"/rotate", url.Values{"confirmed": {"yes"}})
	mustStatus(t, "rotate", code, 200, page)
	code, page = b.post("/ui/t/a/clusters/prod/credentials/"+id[1]+"/revoke", url.Values{"confirmed": {"yes"}})
	mustStatus(t, "revoke", code, 303, page)

	// A deliberate error: the expression does not compile. The error is
	// shown at its field and line.
	broken := strings.Replace(policyYAML, "orValue('') != 'true'", "orValue('') !=", 1)
	code, page = b.post("/ui/t/a/validate", url.Values{"yaml": {broken}})
	mustStatus(t, "validate", code, 200, page)
	if !strings.Contains(page, `data-line="14"`) || !strings.Contains(page, "documents[0].spec.validations[0].expression") {
		t.Errorf("validate does not point at line 14, the expression:\n%s", page)
	}
	code, page = b.post("/ui/t/a/apply", url.Values{"yaml": {broken}})
	mustStatus(t, "apply broken", code, 422, page)
	code, page = b.post("/ui/t/a/apply", url.Values{"yaml": {policyYAML}})
	mustStatus(t, "apply", code, 303, page)
	v2 := strings.Replace(policyYAML, "bad pods", "really bad pods", 1)
	code, page = b.post("/ui/t/a/apply", url.Values{"yaml": {v2}, "kind": {"ValidatingAdmissionPolicy"}, "name": {"no-bad"}})
	mustStatus(t, "apply v2", code, 303, page)

	code, page = b.get("/ui/t/a/policies")
	mustStatus(t, "policies", code, 200, page)
	if !strings.Contains(page, `href="/ui/t/a/objects/ValidatingAdmissionPolicy/no-bad"`) {
		t.Fatalf("policies page lacks the policy:\n%s", page)
	}
	obj := "/ui/t/a/objects/ValidatingAdmissionPolicy/no-bad"
	code, page = b.get(obj)
	mustStatus(t, "policy", code, 200, page)
	vs := regexp.MustCompile(`name="from" value="(\d+)"`).FindAllStringSubmatch(page, -1)
	if len(vs) != 2 || !strings.Contains(page, ">root<") {
		t.Fatalf("history shows %d versions, want 2 by root:\n%s", len(vs), page)
	}
	code, page = b.get(obj + "/diff?from=" + vs[1][1] + "&to=" + vs[0][1])
	mustStatus(t, "diff", code, 200, page)
	if !strings.Contains(page, `<tr class="replace">`) || !strings.Contains(page, "really bad pods") {
		t.Errorf("diff:\n%s", page)
	}
	code, page = b.post(obj+"/rollback", url.Values{"version": {vs[1][1]}})
	mustStatus(t, "rollback unconfirmed", code, 200, page)
	if !strings.Contains(page, `<input type="hidden" name="version" value="`+vs[1][1]+`">`) {
		t.Errorf("the rollback's confirmation does not carry the version:\n%s", page)
	}
	code, page = b.post(obj+"/rollback", url.Values{"version": {vs[1][1]}, "confirmed": {"yes"}})
	mustStatus(t, "rollback", code, 303, page)
	if _, page = b.get(obj); strings.Contains(page, "really bad pods") || !strings.Contains(page, "rolled back to version") {
		t.Errorf("after the rollback the policy is not the first version:\n%s", page)
	}

	// Test, with the stored policies and with unsaved text.
	code, page = b.get("/ui/t/a/test")
	mustStatus(t, "test page", code, 200, page)
	code, page = b.post("/ui/t/a/test", url.Values{"cluster": {"prod"}, "review": {badPodReview}})
	mustStatus(t, "test", code, 200, page)
	if !strings.Contains(page, `<span class="verdict denied">denied</span>`) || !strings.Contains(page, "Policy no-bad, binding no-bad") {
		t.Errorf("test result:\n%s", page)
	}
	allowAll := strings.Replace(policyYAML, "object.metadata.?labels.?bad.orValue('') != 'true'", "true", 1)
	code, page = b.post("/ui/t/a/test", url.Values{"cluster": {"prod"}, "review": {badPodReview}, "objects": {allowAll}})
	mustStatus(t, "test candidate", code, 200, page)
	if !strings.Contains(page, `<span class="verdict allowed">allowed</span>`) || !strings.Contains(page, "unsaved objects") {
		t.Errorf("test with unsaved text:\n%s", page)
	}

	// Decisions and one decision's page.
	d := recordDenial(t, e)
	// The Test page offers the newest decisions to start from.
	_, page = b.get("/ui/t/a/test")
	pick := regexp.MustCompile(`href="(/ui/t/a/test\?at=[^"]+&amp;decision=` + d + `)"`).FindStringSubmatch(page)
	if pick == nil || !strings.Contains(page, "Start from a recorded decision") {
		t.Errorf("the test page offers no recorded decision:\n%s", page)
	} else if code, page = b.get(strings.ReplaceAll(pick[1], "&amp;", "&")); code != 200 || !strings.Contains(page, "Rebuilt from decision "+d) {
		t.Errorf("test page from a picked decision: %d\n%s", code, page)
	}
	if _, page = b.get("/ui/t/a/clusters?counts=1"); !strings.Contains(page, "<dt>Denials (24 h)</dt><dd>1</dd>") {
		t.Errorf("clusters with counts:\n%s", page)
	}
	code, page = b.get("/ui/t/a/decisions?range=1h")
	mustStatus(t, "decisions", code, 200, page)
	if !strings.Contains(page, "mallory") || !strings.Contains(page, `hx-get="/ui/t/a/decisions/summary?range=1h"`) {
		t.Errorf("decisions page:\n%s", page)
	}
	code, page = b.get("/ui/decisions")
	mustStatus(t, "fleet decisions", code, 200, page)
	if !strings.Contains(page, `hx-get="/ui/decisions/summary?range=24h"`) {
		t.Errorf("fleet decisions page:\n%s", page)
	}
	// The fleet's table: every tenant's decisions, filterable by tenant.
	if !strings.Contains(page, "mallory") || !strings.Contains(page, `href="/ui/t/a/decisions/`+d+`?at=`) {
		t.Errorf("the fleet's table lacks tenant a's decision:\n%s", page)
	}
	for _, q := range []string{"tenant=b", "tenant=nobody", "verdict=allowed", "user=bob", "cluster=dev", "policy=other"} {
		if _, page = b.get("/ui/decisions?" + q); strings.Contains(page, "mallory") {
			t.Errorf("the fleet filter %s lets a decision through that it should not", q)
		}
	}
	if _, page = b.get("/ui/decisions?range=1h&tenant=a&user=mallory&verdict=denied&operation=CREATE"); !strings.Contains(page, "mallory") {
		t.Error("the fleet filters leave out a decision that matches them all")
	}
	code, page = b.get("/ui/decisions/summary?range=1h")
	mustStatus(t, "fleet summary", code, 200, page)
	if !strings.Contains(page, "1 requests, 1 denied, in 3 tenants") ||
		!regexp.MustCompile(`<a href="/ui/t/a/decisions\?range=1h">a</a></th><td>1</td><td>1</td>`).MatchString(page) {
		t.Errorf("fleet summary:\n%s", page)
	}
	code, page = b.get("/ui/t/a/decisions/summary?range=1h")
	mustStatus(t, "decisions summary", code, 200, page)
	if !strings.Contains(page, "data-chart=") || !strings.Contains(page, ">no-bad</a>: 1") || !strings.Contains(page, "1 requests, 1 denied") {
		t.Errorf("decisions summary:\n%s", page)
	}
	for _, q := range []string{"verdict=allowed", "operation=DELETE", "resource=deployments", "user=bob", "cluster=dev", "policy=other", "namespace=x", "kind=Deployment"} {
		if _, page = b.get("/ui/t/a/decisions?" + q); strings.Contains(page, "mallory") {
			t.Errorf("the filter %s lets a decision through that it should not", q)
		}
	}
	if _, page = b.get("/ui/t/a/decisions?operation=CREATE&resource=pods&user=mallory&verdict=denied"); !strings.Contains(page, "mallory") {
		t.Error("the filters leave out a decision that matches them all")
	}
	// Both pages keep the filters they were given in their one shared form.
	for _, u := range []string{"/ui/t/a/decisions?kind=Pod&operation=CREATE&verdict=denied", "/ui/decisions?kind=Pod&operation=CREATE&verdict=denied"} {
		_, form := b.get(u)
		for _, want := range []string{`<option value="denied" selected>`, `<option value="CREATE" selected>`, `name="kind" value="Pod"`,
			`id="f-cluster"`, `id="f-namespace"`, `id="f-policy"`, `id="f-user"`, `id="f-resource"`} {
			if !strings.Contains(form, want) {
				t.Errorf("%s: the filter form lacks %s", u, want)
			}
		}
	}
	link := regexp.MustCompile(`href="(/ui/t/a/decisions/` + d + `\?at=[^"]+)"`).FindStringSubmatch(page)
	if _, page = b.get("/ui/t/a/decisions?range=1h"); link == nil {
		link = regexp.MustCompile(`href="(/ui/t/a/decisions/` + d + `\?at=[^"]+)"`).FindStringSubmatch(page)
	}
	if link == nil {
		t.Fatalf("no link to decision %s:\n%s", d, page)
	}
	code, page = b.get(strings.ReplaceAll(link[1], "&amp;", "&"))
	mustStatus(t, "decision", code, 200, page)
	if !strings.Contains(page, "denied by no-bad") {
		t.Errorf("decision page:\n%s", page)
	}
	again := regexp.MustCompile(`href="(/ui/t/a/test\?[^"]+)"`).FindStringSubmatch(page)
	if again == nil {
		t.Fatalf("no link to test the decision again:\n%s", page)
	}
	code, page = b.get(strings.ReplaceAll(again[1], "&amp;", "&"))
	mustStatus(t, "test from a decision", code, 200, page)
	for _, want := range []string{"Rebuilt from decision " + d, "&#34;username&#34;: &#34;mallory&#34;", `<option value="prod" selected>`} {
		if !strings.Contains(page, want) {
			t.Errorf("test page from a decision lacks %q:\n%s", want, page)
		}
	}

	code, page = b.get("/ui/audit")
	mustStatus(t, "audit", code, 200, page)
	if !strings.Contains(page, "ValidatingAdmissionPolicy") || !strings.Contains(page, "Cluster") {
		t.Errorf("audit page:\n%s", page)
	}
	if _, page = b.get("/ui/audit?kind=Tenant"); strings.Contains(page, "ValidatingAdmissionPolicy") {
		t.Error("the audit kind filter lets other kinds through")
	}
}

// recordDenial stores a decision of tenant a's cluster prod through the
// recorder, as the webhook would, and returns its id.
func recordDenial(t *testing.T, e *env) string { return recordDenialBy(t, e, "mallory") }

// recordDenialBy is recordDenial with the request's user name.
func recordDenialBy(t *testing.T, e *env, user string) string {
	t.Helper()
	ctx := context.Background()
	if err := (&decisions.Partitions{Pool: e.pool, Retention: 72 * time.Hour}).Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	rec, err := decisions.NewPGRecorder(decisions.RecorderConfig{Pool: e.pool, SpillDir: t.TempDir(), FlushInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.Must(uuid.NewV7()).String()
	var clusterID int64
	if err := e.pool.QueryRow(ctx, `SELECT id FROM clusters WHERE tenant_id = $1 AND name = 'prod'`, e.tenantA).Scan(&clusterID); err != nil {
		t.Fatal(err)
	}
	rec.Record(&decisions.Decision{ID: id, Time: time.Now().UTC(), Instance: "test", TenantID: e.tenantA, TenantName: "a",
		ClusterID: clusterID, ClusterName: "prod", UID: "u1", Operation: "CREATE", Version: "v1", Resource: "pods", Kind: "Pod",
		Namespace: "default", Name: "p", UserName: user, Verdict: decisions.VerdictDenied, HTTPStatus: 200, Code: 403,
		Reason: "Forbidden", Message: "denied by no-bad",
		Bindings: []decisions.BindingRecord{{Policy: "no-bad", Binding: "no-bad", Outcome: "Violation", Denied: true}}})
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestUploadReview runs Test with the review uploaded as a file, as the
// page's file field sends it.
func TestUploadReview(t *testing.T) {
	e := newEnv(t)
	b := e.signIn(e.operator)
	if code, _ := b.post("/ui/t/a/clusters", url.Values{"name": {"prod"}, "auth": {"token"}}); code != 200 {
		t.Fatal("create cluster")
	}
	if code, _ := b.post("/ui/t/a/apply", url.Values{"yaml": {policyYAML}}); code != 303 {
		t.Fatal("apply")
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("csrf", b.csrf)
	_ = mw.WriteField("cluster", "prod")
	fw, _ := mw.CreateFormFile("file", "review.json")
	_, _ = fw.Write([]byte(badPodReview))
	_ = mw.Close()
	req, _ := http.NewRequest("POST", e.srv.URL+"/ui/t/a/test", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res, page := b.do(req)
	if res.StatusCode != 200 || !strings.Contains(page, `<span class="verdict denied">denied</span>`) {
		t.Fatalf("uploaded review = %d:\n%s", res.StatusCode, page)
	}
}
