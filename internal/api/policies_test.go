package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/inventory"
	"github.com/portcullis-dev/portcullis/internal/policystore"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
	"github.com/portcullis-dev/portcullis/internal/webhook"
)

// storeSnapshots compiles the tenant's live objects on every call: a
// policy cache that is always current, so tests need no notifications.
func storeSnapshots(p *policystore.Store) func(context.Context, int64) (*policystore.Snapshot, error) {
	return func(ctx context.Context, tenantID int64) (*policystore.Snapshot, error) {
		return p.CandidateSnapshot(ctx, tenantID, nil, false)
	}
}

// storeNamespaces reads the inventory from the database on every call.
func storeNamespaces(p *inventory.Store) func(context.Context, int64, int64) (evaluator.NamespaceLookup, error) {
	return func(ctx context.Context, tenantID, clusterID int64) (evaluator.NamespaceLookup, error) {
		nss, err := p.ListNamespaces(ctx, tenantID, clusterID)
		m := evaluator.NamespaceMap{}
		for _, ns := range nss {
			m[ns.Name] = ns
		}
		return m, err
	}
}

func sample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "samples", "baseline", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// baselineBody is the baseline policies and bindings as one apply body.
func baselineBody(t *testing.T) string {
	return sample(t, "policies.yaml") + "\n---\n" + sample(t, "bindings.yaml")
}

func (e *env) apply(token, path, body string) apiv1.ApplyResult {
	e.t.Helper()
	var res apiv1.ApplyResult
	e.doJSON(token, "POST", path, body, http.StatusOK, &res)
	return res
}

func actions(res apiv1.ApplyResult) map[string]int {
	out := map[string]int{}
	for _, r := range res.Results {
		out[r.Action]++
	}
	return out
}

func (e *env) auditEntries() []auditlog.Entry {
	e.t.Helper()
	es, err := e.s.Audit.List(context.Background(), e.tenantA.ID, auditlog.Filter{Limit: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	return es
}

func TestApplyCreatedUnchangedConfigured(t *testing.T) {
	e := newEnv(t)
	body := baselineBody(t)
	res := e.apply(e.adminA, "/api/v1/tenants/a/apply", body)
	n := len(res.Results)
	if n != 20 || actions(res)[apiv1.ActionCreated] != n || res.Version != int64(n) {
		t.Fatalf("first apply: %d results, %v, version %d", n, actions(res), res.Version)
	}
	for i, r := range res.Results {
		if r.Document != i || r.ResourceVersion != int64(i+1) || r.APIVersion != "admissionregistration.k8s.io/v1" || len(r.Warnings) != 0 {
			t.Fatalf("result %d = %+v", i, r)
		}
	}
	if got := len(e.auditEntries()); got != n {
		t.Fatalf("%d audit entries after creating %d objects", got, n)
	}

	res = e.apply(e.adminA, "/api/v1/tenants/a/apply", body)
	if actions(res)[apiv1.ActionUnchanged] != n || res.Version != int64(n) || res.Results[3].ResourceVersion != 4 {
		t.Fatalf("second apply: %v, version %d", actions(res), res.Version)
	}
	if got := len(e.auditEntries()); got != n {
		t.Fatalf("an unchanged apply was audited: %d entries", got)
	}

	changed := strings.Replace(body, "object.spec.replicas <= 50", "object.spec.replicas <= 40", 1)
	res = e.apply(e.adminA, "/api/v1/tenants/a/apply", changed)
	if a := actions(res); a[apiv1.ActionConfigured] != 1 || a[apiv1.ActionUnchanged] != n-1 || res.Version != int64(n+1) {
		t.Fatalf("third apply: %v, version %d", a, res.Version)
	}
	var cfg apiv1.ApplyItem
	for _, r := range res.Results {
		if r.Action == apiv1.ActionConfigured {
			cfg = r
		}
	}
	if cfg.Name != "baseline-max-replicas" || cfg.Kind != "ValidatingAdmissionPolicy" || cfg.ResourceVersion != int64(n+1) {
		t.Fatalf("configured = %+v", cfg)
	}
	last := e.auditEntries()[0]
	if last.Action != "update" || last.Name != "baseline-max-replicas" || last.ActorName != "alice" || last.Actor != fmt.Sprintf("token:%d/admin", last.TokenID) ||
		last.VersionBefore == nil || *last.VersionBefore != int64(cfg.Document+1) || last.VersionAfter == nil || *last.VersionAfter != int64(n+1) {
		t.Fatalf("audit entry = %+v", last)
	}

	// JSON: a List whose items are a param and an unchanged policy.
	list := `{"apiVersion": "v1", "kind": "List", "items": [
	  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "limits", "namespace": "shop"}, "data": {"max": "3"}}
	]}`
	res = e.apply(e.adminA, "/api/v1/tenants/a/apply", list)
	if len(res.Results) != 1 || res.Results[0].Action != apiv1.ActionCreated || res.Results[0].Namespace != "shop" ||
		len(res.Results[0].Warnings) != 1 || !strings.Contains(res.Results[0].Warnings[0], "no policy has paramKind ConfigMap") {
		t.Fatalf("List apply = %+v", res)
	}
}

func TestApplyBodyForms(t *testing.T) {
	e := newEnv(t)
	cm := func(name string) string {
		return fmt.Sprintf(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": %q, "namespace": "n"}}`, name)
	}
	bodies := []struct {
		name, body string
		want       []string
	}{
		{"JSON stream", cm("a") + "\n" + cm("b"), []string{"a", "b"}},
		{"JSON array", "[" + cm("c") + ", " + cm("d") + "]", []string{"c", "d"}},
		{"ConfigMapList", `{"apiVersion": "v1", "kind": "ConfigMapList", "items": [` + cm("e") + `]}`, []string{"e"}},
		{"YAML List", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: f, namespace: n}}\n" +
			"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: g, namespace: n}\n", []string{"f", "g"}},
		{"leading separator and CRLF", "---\r\napiVersion: v1\r\nkind: ConfigMap\r\nmetadata: {name: h, namespace: n}\r\n", []string{"h"}},
	}
	for _, b := range bodies {
		res := e.apply(e.adminA, "/api/v1/tenants/a/apply", b.body)
		var got []string
		for i, r := range res.Results {
			if r.Document != i || r.Action != apiv1.ActionCreated {
				t.Errorf("%s: result %d = %+v", b.name, i, r)
			}
			got = append(got, r.Name)
		}
		if !slices.Equal(got, b.want) {
			t.Errorf("%s: applied %v, want %v", b.name, got, b.want)
		}
	}
	code, raw := e.do(e.adminA, "POST", "/api/v1/tenants/a/apply", `{"apiVersion": "v1", "kind": "List", "items": []}`)
	if code != 400 {
		t.Errorf("an empty List = %d %s", code, raw)
	}
}

func TestApplyParamWarningsConsiderTheSameApply(t *testing.T) {
	e := newEnv(t)
	policy := `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: limited}
spec:
  paramKind: {apiVersion: example.com/v1, kind: Limits}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
  validations:
  - expression: "size(object.spec.containers) <= int(params.spec.max)"
`
	body := "# comment-only documents are skipped\n---\n" + policy + `---
apiVersion: example.com/v2
kind: Limits
metadata: {name: small, namespace: shop}
spec: {max: 2}
---
# nothing here either
---
apiVersion: example.com/v1
kind: Limitz
metadata: {name: typo, namespace: shop}
spec: {max: 2}
`
	res := e.apply(e.adminA, "/api/v1/tenants/a/apply", body)
	if len(res.Results) != 3 {
		t.Fatalf("results = %+v", res.Results)
	}
	if w := res.Results[1].Warnings; len(w) != 0 {
		t.Errorf("a param of the policy's paramKind (another version) warned: %v", w)
	}
	if w := res.Results[2].Warnings; len(w) != 1 || !strings.Contains(w[0], "Limitz.example.com") {
		t.Errorf("the typo param: warnings %v", w)
	}
	// Once the policy is stored, a param applied alone is matched to it.
	res = e.apply(e.adminA, "/api/v1/tenants/a/apply", "apiVersion: example.com/v1\nkind: Limits\nmetadata: {name: big, namespace: shop}\nspec: {max: 9}\n")
	if len(res.Results[0].Warnings) != 0 {
		t.Errorf("warned about a param of a stored policy's paramKind: %v", res.Results[0].Warnings)
	}
}

func TestApplyDryRunWritesNothing(t *testing.T) {
	e := newEnv(t)
	e.apply(e.adminA, "/api/v1/tenants/a/apply", sample(t, "policies.yaml"))
	before := len(e.auditEntries())
	body := strings.Replace(sample(t, "policies.yaml"), "object.spec.replicas <= 50", "object.spec.replicas <= 40", 1) +
		"---\n" + sample(t, "bindings.yaml")
	dry := e.apply(e.adminA, "/api/v1/tenants/a/apply?dryRun=true", body)
	if !dry.DryRun || dry.Version != 21 {
		t.Fatalf("dry run = version %d, dryRun %v", dry.Version, dry.DryRun)
	}
	a := actions(dry)
	if a[apiv1.ActionConfigured] != 1 || a[apiv1.ActionCreated] != 10 || a[apiv1.ActionUnchanged] != 9 {
		t.Fatalf("dry run actions = %v", a)
	}
	v, err := e.s.Policies.TenantVersion(context.Background(), e.tenantA.ID)
	if err != nil || v != 10 {
		t.Fatalf("tenant version after a dry run = %d, %v", v, err)
	}
	var bindings apiv1.List[json.RawMessage]
	e.doJSON(e.viewerA, "GET", "/api/v1/tenants/a/objects?type=bindings", nil, http.StatusOK, &bindings)
	if len(bindings.Items) != 0 {
		t.Fatalf("a dry run stored %d bindings", len(bindings.Items))
	}
	if after := len(e.auditEntries()); after != before {
		t.Fatalf("a dry run was audited: %d entries, was %d", after, before)
	}
	// The real apply gives exactly what the dry run said.
	real := e.apply(e.adminA, "/api/v1/tenants/a/apply", body)
	real.DryRun = true
	a1, _ := json.Marshal(dry)
	a2, _ := json.Marshal(real)
	if !bytes.Equal(a1, a2) {
		t.Fatalf("dry run and apply differ:\n%s\n%s", a1, a2)
	}
}

func TestApplyRefusedNamesDocumentAndField(t *testing.T) {
	e := newEnv(t)
	good := `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: ok}
spec: {policyName: x, validationActions: [Deny]}
`
	typo := strings.Replace(good, "ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicyBindng", 1)
	typo = strings.Replace(typo, "name: ok", "name: typo", 1)
	alpha := strings.Replace(good, "admissionregistration.k8s.io/v1", "admissionregistration.k8s.io/v1alpha1", 1)
	alpha = strings.Replace(alpha, "name: ok", "name: alpha", 1)
	badCEL := `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: bad-cel}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
  validations:
  - expression: "object.spec.containers.all(c, c.image.startsWith('x')"
`
	tests := []struct {
		name, body string
		code       int
		wantCauses []string // prefixes of "field: message"
	}{
		{"typo kind", good + "---\n" + typo, 422, []string{`documents[1].kind: ValidatingAdmissionPolicyBindng.admissionregistration.k8s.io "typo": Unsupported value: "ValidatingAdmissionPolicyBindng"`}},
		{"v1alpha1", alpha + "---\n" + good, 422, []string{`documents[0].apiVersion: ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io "alpha": Unsupported value: "admissionregistration.k8s.io/v1alpha1"`}},
		{"invalid CEL", good + "---\n" + badCEL, 422, []string{`documents[1].spec.validations[0].expression: ValidatingAdmissionPolicy.admissionregistration.k8s.io "bad-cel": Invalid value`}},
		{"all at once", typo + "---\n" + good + "---\n" + alpha + "---\n" + badCEL, 422, []string{
			"documents[0].kind: ", "documents[2].apiVersion: ", "documents[3].spec.validations[0].expression: "}},
		{"the same object twice", good + "---\n" + good, 422, []string{`documents[1].metadata.name: ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io "ok": Invalid value: "ok": the same object as documents[0]`}},
		{"no kind", "apiVersion: v1\nmetadata: {name: x}\n", 422, []string{"documents[0].kind: Required value"}},
		{"not YAML", "\tkind: [unclosed\n", 422, []string{"documents[0]: not valid YAML or JSON"}},
		{"plain text", "this is not an object", 422, []string{"documents[0]: must be a Kubernetes object"}},
		{"binary", "\x00\xff\xfe\x01garbage", 422, []string{"documents[0]: "}},
		{"a list of numbers", "[1, 2]", 422, []string{"documents[0]: must be a Kubernetes object (a YAML or JSON mapping with apiVersion and kind), not a number"}},
		{"bad JSON", `{"apiVersion": "v1", "kind": }`, 422, []string{"documents[0]: invalid JSON"}},
		{"YAML error in the second document", good + "---\nkind: [\n", 422, []string{"documents[1]: not valid YAML or JSON"}},
		{"duplicate key", "apiVersion: v1\nkind: ConfigMap\nkind: Secret\nmetadata: {name: x}\n", 422, []string{"documents[0]: not valid YAML or JSON"}},
		{"only comments", "# nothing\n---\n# still nothing\n", 400, nil},
		{"empty", "", 400, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, raw := e.do(e.adminA, "POST", "/api/v1/tenants/a/apply", tc.body)
			if code != tc.code {
				t.Fatalf("= %d %s", code, raw)
			}
			_, _, msg, causes := statusOf(t, raw)
			if msg == "" {
				t.Fatalf("no message: %s", raw)
			}
			for _, want := range tc.wantCauses {
				if !slices.ContainsFunc(causes, func(c string) bool { return strings.HasPrefix(c, want) }) {
					t.Errorf("no cause %q in %q", want, causes)
				}
				field, _, _ := strings.Cut(want, ":")
				if !strings.Contains(msg, field) {
					t.Errorf("message %q does not name %s", msg, field)
				}
			}
		})
	}
	var all apiv1.List[json.RawMessage]
	e.doJSON(e.viewerA, "GET", "/api/v1/tenants/a/objects", nil, http.StatusOK, &all)
	if len(all.Items) != 0 {
		t.Fatalf("refused applies stored %d objects", len(all.Items))
	}
}

// paramsBody has params of three kinds, two of them named Limits in two
// groups.
const paramsBody = `apiVersion: v1
kind: ConfigMap
metadata: {name: cm1, namespace: shop, labels: {tier: gold}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm2, namespace: web, labels: {tier: silver}}
---
apiVersion: example.com/v1
kind: Limits
metadata: {name: l1}
---
apiVersion: other.example.com/v1
kind: Limits
metadata: {name: l1}
`

func objectNames(t *testing.T, items []json.RawMessage) []string {
	t.Helper()
	var out []string
	for _, raw := range items {
		var o struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
		}
		if err := json.Unmarshal(raw, &o); err != nil {
			t.Fatal(err)
		}
		out = append(out, o.Kind+"/"+o.Metadata.Namespace+"/"+o.Metadata.Name)
	}
	return out
}

func TestGetAndListObjects(t *testing.T) {
	e := newEnv(t)
	e.apply(e.adminA, "/api/v1/tenants/a/apply", baselineBody(t)+"---\n"+paramsBody)
	list := func(query string) []string {
		t.Helper()
		var l apiv1.List[json.RawMessage]
		e.doJSON(e.viewerA, "GET", "/api/v1/tenants/a/objects"+query, nil, http.StatusOK, &l)
		if l.Continue != "" {
			t.Fatalf("%s: a second page with the default limit", query)
		}
		return objectNames(t, l.Items)
	}
	counts := []struct {
		query string
		want  int
	}{
		{"", 24}, {"?type=policies", 10}, {"?type=bindings", 10}, {"?type=params", 4},
		{"?kind=vap", 10}, {"?kind=ValidatingAdmissionPolicyBinding", 10}, {"?kind=VALIDATINGADMISSIONPOLICY", 10},
		{"?kind=configmap", 2}, {"?kind=configmap&namespace=shop", 1}, {"?labelSelector=tier%3Dgold", 1},
		{"?type=params&labelSelector=tier", 2}, {"?kind=limits&group=other.example.com", 1},
		{"?group=", 2}, {"?kind=nothing", 0}, {"?type=policies&kind=vapb", 0},
	}
	for _, c := range counts {
		if got := list(c.query); len(got) != c.want {
			t.Errorf("list%s = %d items %v, want %d", c.query, len(got), got, c.want)
		}
	}
	code, raw := e.do(e.viewerA, "GET", "/api/v1/tenants/a/objects?kind=limits", nil)
	if _, _, msg, causes := statusOf(t, raw); code != 422 || len(causes) != 1 || !strings.HasPrefix(causes[0], "group: ") ||
		!strings.Contains(msg, "example.com") || !strings.Contains(msg, "other.example.com") {
		t.Errorf("ambiguous kind = %d %s", code, raw)
	}
	for _, q := range []string{"?type=all", "?labelSelector=%3D%3D", "?limit=0", "?continue=%25"} {
		if code, raw := e.do(e.viewerA, "GET", "/api/v1/tenants/a/objects"+q, nil); code != 422 {
			t.Errorf("list%s = %d %s, want 422", q, code, raw)
		}
	}

	// Paging: every object once, in order, whatever the page size.
	all := list("")
	for _, limit := range []int{1, 3, 7, 24, 25} {
		var got []string
		cont := ""
		for pages := 0; ; pages++ {
			if pages > 30 {
				t.Fatal("paging does not end")
			}
			var l apiv1.List[json.RawMessage]
			e.doJSON(e.viewerA, "GET", fmt.Sprintf("/api/v1/tenants/a/objects?limit=%d&continue=%s", limit, cont), nil, http.StatusOK, &l)
			got = append(got, objectNames(t, l.Items)...)
			if l.Continue == "" {
				break
			}
			cont = l.Continue
		}
		if !slices.Equal(got, all) {
			t.Errorf("limit %d: pages give %v, want %v", limit, got, all)
		}
	}

	get := func(path string) (int, map[string]any) {
		t.Helper()
		code, raw := e.do(e.viewerA, "GET", "/api/v1/tenants/a/objects/"+path, nil)
		var o map[string]any
		_ = json.Unmarshal(raw, &o)
		return code, o
	}
	for _, p := range []string{"vap/baseline-no-privileged", "ValidatingAdmissionPolicy/baseline-no-privileged",
		"validatingadmissionpolicy/baseline-no-privileged"} {
		code, o := get(p)
		if code != 200 || o["kind"] != "ValidatingAdmissionPolicy" || o["metadata"].(map[string]any)["name"] != "baseline-no-privileged" {
			t.Errorf("GET %s = %d %v", p, code, o)
		}
	}
	if code, o := get("configmap/cm2?namespace=web"); code != 200 || o["metadata"].(map[string]any)["resourceVersion"] == "" {
		t.Errorf("GET configmap = %d %v", code, o)
	}
	if code, o := get("Limits/l1?group=other.example.com"); code != 200 || o["apiVersion"] != "other.example.com/v1" {
		t.Errorf("GET Limits in other.example.com = %d %v", code, o)
	}
	if code, _ := get("Limits/l1"); code != 422 {
		t.Errorf("GET an ambiguous kind = %d, want 422", code)
	}
	for _, p := range []string{"vap/nope", "configmap/cm2", "configmap/cm2?namespace=shop", "nokind/x", "vapb/baseline-no-privileged?namespace=x"} {
		if code, _ := get(p); code != 404 {
			t.Errorf("GET %s = %d, want 404", p, code)
		}
	}
	// Once one group's objects of that kind are all deleted, the kind is
	// the live group's again; the deleted one stays reachable with ?group=.
	other := strings.Split(list("?kind=limits&group=other.example.com")[0], "/") // kind/namespace/name
	otherPath := "/api/v1/tenants/a/objects/limits/" + other[2]
	otherQuery := "?group=other.example.com&namespace=" + other[1]
	e.doJSON(e.adminA, "DELETE", otherPath+otherQuery, nil, http.StatusOK, nil)
	if got := list("?kind=limits"); len(got) != 1 {
		t.Errorf("list?kind=limits after deleting the other group's = %v", got)
	}
	if code, raw := e.do(e.viewerA, "GET", otherPath+"/history"+otherQuery, nil); code != http.StatusOK {
		t.Errorf("history of the deleted one = %d %s", code, raw)
	}
}

func TestDeleteObject(t *testing.T) {
	e := newEnv(t)
	e.apply(e.adminA, "/api/v1/tenants/a/apply", paramsBody)
	path := "/api/v1/tenants/a/objects/configmap/cm1?namespace=shop"
	code, raw := e.do(e.adminA, "DELETE", path+"&resourceVersion=3", nil)
	if st, reason, _, _ := statusOf(t, raw); code != 409 || st != 409 || reason != "Conflict" {
		t.Fatalf("stale resourceVersion = %d %s", code, raw)
	}
	var dry apiv1.ApplyItem
	e.doJSON(e.adminA, "DELETE", path+"&resourceVersion=1&dryRun=true", nil, http.StatusOK, &dry)
	if dry.Action != apiv1.ActionDeleted || dry.ResourceVersion != 5 {
		t.Fatalf("dry-run delete = %+v", dry)
	}
	e.doJSON(e.viewerA, "GET", path, nil, http.StatusOK, nil)
	var del apiv1.ApplyItem
	e.doJSON(e.adminA, "DELETE", path+"&resourceVersion=1", nil, http.StatusOK, &del)
	if del.APIVersion != "v1" || del.Kind != "ConfigMap" || del.Namespace != "shop" || del.Name != "cm1" ||
		del.Action != apiv1.ActionDeleted || del.ResourceVersion != 5 {
		t.Fatalf("delete = %+v", del)
	}
	if code, _ := e.do(e.viewerA, "GET", path, nil); code != 404 {
		t.Fatalf("GET after delete = %d", code)
	}
	if code, _ := e.do(e.adminA, "DELETE", path, nil); code != 404 {
		t.Fatalf("second delete = %d", code)
	}
	es := e.auditEntries()
	if len(es) != 5 || es[0].Action != "delete" || *es[0].VersionBefore != 1 || *es[0].VersionAfter != 5 || es[0].DryRun {
		t.Fatalf("audit = %d entries, last %+v", len(es), es[0])
	}
	if code, _ := e.do(e.adminA, "DELETE", path+"&dryRun=maybe", nil); code != 422 {
		t.Fatalf("dryRun=maybe = %d", code)
	}
}

func TestHistoryDiffRollback(t *testing.T) {
	e := newEnv(t)
	policies := sample(t, "policies.yaml")
	v1 := e.apply(e.adminA, "/api/v1/tenants/a/apply", policies)
	var rv1 int64
	for _, r := range v1.Results {
		if r.Name == "baseline-max-replicas" {
			rv1 = r.ResourceVersion
		}
	}
	v2 := e.apply(e.adminA, "/api/v1/tenants/a/apply", strings.Replace(policies, "object.spec.replicas <= 50", "object.spec.replicas <= 40", 1))
	rv2 := v2.Version
	obj := "/api/v1/tenants/a/objects/vap/baseline-max-replicas"

	var hist apiv1.List[apiv1.Version]
	e.doJSON(e.viewerA, "GET", obj+"/history", nil, http.StatusOK, &hist)
	if len(hist.Items) != 2 || hist.Items[0].Version != rv2 || hist.Items[1].Version != rv1 ||
		hist.Items[0].Operation != "update" || hist.Items[1].Operation != "create" || hist.Items[0].Author != "alice" ||
		hist.Items[0].Object != nil {
		t.Fatalf("history = %+v", hist)
	}
	var one apiv1.Version
	e.doJSON(e.viewerA, "GET", fmt.Sprintf("%s/versions/%d", obj, rv1), nil, http.StatusOK, &one)
	if one.Version != rv1 || !strings.Contains(string(one.Object), `object.spec.replicas \u003c= 50`) {
		t.Fatalf("version %d = %+v", rv1, one)
	}

	var d apiv1.Diff
	e.doJSON(e.viewerA, "GET", fmt.Sprintf("%s/diff?from=%d", obj, rv1), nil, http.StatusOK, &d)
	if d.From != rv1 || d.To != rv2 || !strings.Contains(d.Diff, "-  - expression: '!has(object.spec.replicas) || object.spec.replicas <= 50'") ||
		!strings.Contains(d.Diff, "+  - expression: '!has(object.spec.replicas) || object.spec.replicas <= 40'") ||
		!strings.HasPrefix(d.Diff, "--- ") {
		t.Fatalf("diff = %+v", d)
	}

	var rb apiv1.ApplyItem
	e.doJSON(e.adminA, "POST", obj+"/rollback", apiv1.Rollback{ToVersion: rv1}, http.StatusOK, &rb)
	if rb.Action != apiv1.ActionRolledBack || rb.ResourceVersion != rv2+1 || rb.Name != "baseline-max-replicas" {
		t.Fatalf("rollback = %+v", rb)
	}
	var cur map[string]any
	e.doJSON(e.viewerA, "GET", obj, nil, http.StatusOK, &cur)
	if js, _ := json.Marshal(cur); !strings.Contains(string(js), "object.spec.replicas \\u003c= 50") {
		t.Fatalf("after rollback: %s", js)
	}
	e.doJSON(e.viewerA, "GET", obj+"/history", nil, http.StatusOK, &hist)
	if len(hist.Items) != 3 || hist.Items[0].Operation != "rollback" || hist.Items[0].RollbackOf != rv1 {
		t.Fatalf("history after rollback = %+v", hist.Items)
	}
	if last := e.auditEntries()[0]; last.Action != "rollback" || *last.VersionBefore != rv2 || *last.VersionAfter != rv2+1 {
		t.Fatalf("audit = %+v", last)
	}
	// History pages newest first.
	var p1, p2 apiv1.List[apiv1.Version]
	e.doJSON(e.viewerA, "GET", obj+"/history?limit=2", nil, http.StatusOK, &p1)
	e.doJSON(e.viewerA, "GET", obj+"/history?limit=2&continue="+p1.Continue, nil, http.StatusOK, &p2)
	if len(p1.Items) != 2 || len(p2.Items) != 1 || p2.Items[0].Version != rv1 || p2.Continue != "" {
		t.Fatalf("history pages = %+v / %+v", p1, p2)
	}

	// A deletion diffs as empty.
	var del apiv1.ApplyItem
	e.doJSON(e.adminA, "DELETE", obj, nil, http.StatusOK, &del)
	e.doJSON(e.viewerA, "GET", fmt.Sprintf("%s/diff?from=%d", obj, rv2+1), nil, http.StatusOK, &d)
	if d.To != del.ResourceVersion || strings.Contains(d.Diff, "\n+ ") || !strings.Contains(d.Diff, "-kind: ValidatingAdmissionPolicy") {
		t.Fatalf("diff to the tombstone = %+v", d)
	}
	// Rolling back a deleted object brings it back; to a deletion is refused.
	e.doJSON(e.adminA, "POST", obj+"/rollback", apiv1.Rollback{ToVersion: rv1}, http.StatusOK, &rb)
	e.doJSON(e.viewerA, "GET", obj, nil, http.StatusOK, nil)

	bad := []struct {
		method, path string
		body         any
		code         int
	}{
		{"POST", obj + "/rollback", apiv1.Rollback{ToVersion: del.ResourceVersion}, 422},
		{"POST", obj + "/rollback", apiv1.Rollback{ToVersion: 999}, 404},
		{"POST", obj + "/rollback", apiv1.Rollback{}, 422},
		{"POST", obj + "/rollback", `{"toVersion": 1, "typo": true}`, 400},
		{"POST", obj + "/rollback", apiv1.Rollback{ToVersion: rv1, ResourceVersion: "1"}, 409},
		{"GET", obj + "/diff", nil, 422},
		{"GET", obj + "/diff?from=x", nil, 422},
		{"GET", obj + "/diff?from=999", nil, 404},
		{"GET", obj + "/versions/0", nil, 422},
		{"GET", obj + "/versions/999", nil, 404},
		{"GET", "/api/v1/tenants/a/objects/vap/nope/history", nil, 404},
	}
	for _, b := range bad {
		token := e.adminA
		if code, raw := e.do(token, b.method, b.path, b.body); code != b.code {
			t.Errorf("%s %s = %d %s, want %d", b.method, b.path, code, raw, b.code)
		}
	}
}

func (e *env) cluster(tenantID int64, name string) tenancy.Cluster {
	e.t.Helper()
	c, err := e.s.Tenancy.CreateCluster(context.Background(), tenantID, name, map[string]string{"env": "prod"})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

const namespacesYAML = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Namespace
  metadata:
    name: shop
    labels: {kubernetes.io/metadata.name: shop, team: checkout}
    managedFields: [{manager: kubectl}]
  spec: {finalizers: [kubernetes]}
  status: {phase: Active}
- apiVersion: v1
  kind: Namespace
  metadata:
    name: kube-system
    labels: {kubernetes.io/metadata.name: kube-system}
`

func TestNamespaceInventory(t *testing.T) {
	e := newEnv(t)
	e.cluster(e.tenantA.ID, "prod")
	path := "/api/v1/tenants/a/clusters/prod/namespaces"
	var imp apiv1.NamespaceImport
	e.doJSON(e.adminA, "PUT", path, namespacesYAML, http.StatusOK, &imp)
	if imp.Namespaces != 2 {
		t.Fatalf("import = %+v", imp)
	}
	var l apiv1.List[json.RawMessage]
	e.doJSON(e.viewerA, "GET", path, nil, http.StatusOK, &l)
	if got := objectNames(t, l.Items); !slices.Equal(got, []string{"Namespace//kube-system", "Namespace//shop"}) {
		t.Fatalf("inventory = %v", got)
	}
	if strings.Contains(string(l.Items[1]), "managedFields") || !strings.Contains(string(l.Items[1]), `"team": "checkout"`) {
		t.Fatalf("shop = %s", l.Items[1])
	}
	var p apiv1.List[json.RawMessage]
	e.doJSON(e.viewerA, "GET", path+"?limit=1", nil, http.StatusOK, &p)
	if len(p.Items) != 1 || p.Continue == "" {
		t.Fatalf("page = %+v", p)
	}

	// kubectl get namespaces -o json: the upload replaces the inventory.
	e.doJSON(e.adminA, "PUT", path, `{"apiVersion": "v1", "kind": "NamespaceList", "metadata": {"resourceVersion": ""},
	  "items": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web"}}]}`, http.StatusOK, &imp)
	e.doJSON(e.viewerA, "GET", path, nil, http.StatusOK, &l)
	if got := objectNames(t, l.Items); imp.Namespaces != 1 || !slices.Equal(got, []string{"Namespace//web"}) {
		t.Fatalf("after the second upload: %v", got)
	}
	if last := e.auditEntries()[0]; last.Action != "import" || last.Kind != "NamespaceInventory" || last.Name != "prod" || last.Detail["cluster"] != "prod" {
		t.Fatalf("audit = %+v", last)
	}

	bad := []struct {
		name, body string
		code       int
		cause      string
	}{
		{"a ConfigMap", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n", 422, "items[1].kind: "},
		{"a bad name", "apiVersion: v1\nkind: Namespace\nmetadata: {name: Not_A_Label}\n", 422, "items[0].metadata.name: "},
		{"twice", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n", 422, "items[1].metadata.name: "},
		{"garbage", "{{{", 422, "items[0]: "},
		{"empty", "", 400, ""},
	}
	for _, b := range bad {
		code, raw := e.do(e.adminA, "PUT", path, b.body)
		_, _, _, causes := statusOf(t, raw)
		if code != b.code || (b.cause != "" && !slices.ContainsFunc(causes, func(c string) bool { return strings.HasPrefix(c, b.cause) })) {
			t.Errorf("%s: = %d %s, want %d with a cause on %s", b.name, code, raw, b.code, b.cause)
		}
	}
	e.doJSON(e.viewerA, "GET", path, nil, http.StatusOK, &l)
	if len(l.Items) != 1 {
		t.Fatalf("a refused upload changed the inventory: %d", len(l.Items))
	}
	if code, _ := e.do(e.viewerA, "GET", "/api/v1/tenants/a/clusters/nope/namespaces", nil); code != 404 {
		t.Fatalf("unknown cluster = %d", code)
	}
}

// review wraps an object in an AdmissionReview as an apiserver sends it.
func review(t *testing.T, version, namespace string, object string) []byte {
	t.Helper()
	return fmt.Appendf(nil, `{"apiVersion": %q, "kind": "AdmissionReview", "request": {
	  "uid": "5b8a1c52-0000-4000-8000-000000000001",
	  "kind": {"group": "", "version": "v1", "kind": "Pod"},
	  "resource": {"group": "", "version": "v1", "resource": "pods"},
	  "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
	  "requestResource": {"group": "", "version": "v1", "resource": "pods"},
	  "name": "api-7d9f8c6b5-x2k9q", "namespace": %q, "operation": "CREATE",
	  "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
	  "object": %s, "oldObject": null, "dryRun": false,
	  "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}}}`, version, namespace, object)
}

// webhookAnswer is what the real webhook handler answers for rev from the
// cluster.
func (e *env) webhookAnswer(cl tenancy.Cluster, rev []byte) []byte {
	e.t.Helper()
	return e.webhookAnswerAt(cl, rev, evaluator.Validating)
}

// webhookAnswerAt is webhookAnswer from the webhook of kind: /validate or
// /mutate.
func (e *env) webhookAnswerAt(cl tenancy.Cluster, rev []byte, kind evaluator.Kind) []byte {
	e.t.Helper()
	h := &webhook.Handler{
		Kind: kind,
		Authenticate: func(*http.Request) (tenancy.Identity, error) {
			return tenancy.Identity{TenantID: cl.TenantID, TenantName: "a", ClusterID: cl.ID, ClusterName: cl.Name, ClusterLabels: cl.Labels}, nil
		},
		Snapshot:   e.s.Snapshot,
		Namespaces: e.s.Namespaces,
		Metrics:    webhook.NewMetrics(prometheus.NewRegistry(), false),
		Logger:     e.s.Logger,
	}
	req := httptest.NewRequest("POST", "/t/a/"+kind.String(), bytes.NewReader(rev))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		e.t.Fatalf("webhook = %d %s", w.Code, w.Body)
	}
	return w.Body.Bytes()
}

func (e *env) evaluate(token, cluster string, req apiv1.EvaluateRequest) apiv1.EvaluateResponse {
	e.t.Helper()
	var res apiv1.EvaluateResponse
	e.doJSON(token, "POST", "/api/v1/tenants/a/clusters/"+cluster+"/evaluate", req, http.StatusOK, &res)
	return res
}

func TestEvaluateAnswersAsTheWebhook(t *testing.T) {
	e := newEnv(t)
	cl := e.cluster(e.tenantA.ID, "prod")
	e.apply(e.adminA, "/api/v1/tenants/a/apply", baselineBody(t))
	e.doJSON(e.adminA, "PUT", "/api/v1/tenants/a/clusters/prod/namespaces", namespacesYAML, http.StatusOK, nil)
	before := len(e.auditEntries())
	pod := sample(t, "pod.json")
	// The init container "migrate" made privileged.
	privileged := strings.Replace(pod, `"allowPrivilegeEscalation": false,`, `"allowPrivilegeEscalation": false, "privileged": true,`, 1)
	if privileged == pod {
		t.Fatal("pod.json changed; the test cannot make it privileged")
	}

	cases := []struct {
		name, version, namespace, object string
		allowed                          bool
	}{
		{"good pod", "admission.k8s.io/v1", "shop", pod, true},
		{"privileged pod", "admission.k8s.io/v1", "shop", privileged, false},
		{"privileged pod, v1beta1", "admission.k8s.io/v1beta1", "shop", privileged, false},
		{"privileged pod in kube-system", "admission.k8s.io/v1", "kube-system", privileged, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rev := review(t, tc.version, tc.namespace, tc.object)
			res := e.evaluate(e.viewerA, "prod", apiv1.EvaluateRequest{Review: rev})
			want := e.webhookAnswer(cl, rev)
			if !bytes.Equal(res.Review, want) {
				t.Fatalf("evaluate review:\n%s\nwebhook:\n%s", res.Review, want)
			}
			var out struct {
				APIVersion string
				Response   struct {
					Allowed bool
					Status  *struct {
						Code    int
						Message string
					}
				}
			}
			if err := json.Unmarshal(res.Review, &out); err != nil {
				t.Fatal(err)
			}
			if out.APIVersion != tc.version || out.Response.Allowed != tc.allowed || res.SnapshotVersion != 20 || res.Candidate {
				t.Fatalf("review = %s, snapshot %d", res.Review, res.SnapshotVersion)
			}
			if !tc.allowed && (out.Response.Status == nil || !strings.Contains(out.Response.Status.Message, "privileged containers are not allowed: migrate")) {
				t.Fatalf("denial = %s", res.Review)
			}
			if len(res.Trace) != 10 {
				t.Fatalf("trace has %d entries, want one per baseline binding", len(res.Trace))
			}
			for _, tr := range res.Trace {
				switch {
				case tr.Policy == "baseline-max-replicas":
					if tr.Matched || tr.Reason != "matchConstraints do not match the request" || tr.Outcome != "NotMatched" || tr.Binding != "" {
						t.Errorf("max-replicas trace = %+v", tr)
					}
				case tc.namespace == "kube-system":
					if tr.Matched || tr.Reason != "matchResources do not match the request" || tr.Outcome != "NotMatched" || tr.Binding != tr.Policy {
						t.Errorf("kube-system trace = %+v", tr)
					}
				default:
					if !tr.Matched || tr.Cost <= 0 || len(tr.Validations) == 0 || tr.Validations[0].Expression == "" || tr.Validations[0].Cost <= 0 {
						t.Errorf("trace = %+v", tr)
					}
					if tr.Policy == "baseline-no-privileged" {
						if tr.Outcome != map[bool]string{true: "Pass", false: "Violation"}[tc.allowed] ||
							(!tc.allowed && (tr.Validations[0].Result != "false" || !strings.Contains(tr.Validations[0].Message, "migrate"))) {
							t.Errorf("no-privileged trace = %+v", tr)
						}
					}
				}
			}
		})
	}
	if after := len(e.auditEntries()); after != before {
		t.Fatalf("evaluate was audited")
	}
	ns, err := e.s.Inventory.ListNamespaces(context.Background(), e.tenantA.ID, cl.ID)
	if err != nil || len(ns) != 2 {
		t.Fatalf("evaluate changed the inventory: %d, %v", len(ns), err)
	}

	// A namespace review the webhook would learn from: evaluate does not.
	nsReview := []byte(`{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u1",
	  "kind": {"group": "", "version": "v1", "kind": "Namespace"}, "resource": {"group": "", "version": "v1", "resource": "namespaces"},
	  "name": "newns", "operation": "CREATE", "userInfo": {"username": "u"},
	  "object": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "newns", "labels": {"team": "x"}}}}}`)
	e.evaluate(e.viewerA, "prod", apiv1.EvaluateRequest{Review: nsReview})
	if ns, _ := e.s.Inventory.ListNamespaces(context.Background(), e.tenantA.ID, cl.ID); len(ns) != 2 {
		t.Fatalf("evaluate learned a namespace: %d", len(ns))
	}

	bad := []struct {
		name  string
		body  any
		code  int
		cause string
	}{
		{"no review", apiv1.EvaluateRequest{}, 422, "review: "},
		{"not a review", apiv1.EvaluateRequest{Review: json.RawMessage(`{"apiVersion": "v1", "kind": "Pod"}`)}, 422, "review: "},
		{"no uid", apiv1.EvaluateRequest{Review: json.RawMessage(`{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}`)}, 422, "review: "},
		{"unknown field", `{"review": {}, "candidates": []}`, 400, ""},
	}
	for _, b := range bad {
		code, raw := e.do(e.viewerA, "POST", "/api/v1/tenants/a/clusters/prod/evaluate", b.body)
		_, _, _, causes := statusOf(t, raw)
		if code != b.code || (b.cause != "" && (len(causes) == 0 || !strings.HasPrefix(causes[0], b.cause))) {
			t.Errorf("%s = %d %s", b.name, code, raw)
		}
	}
	if code, _ := e.do(e.viewerA, "POST", "/api/v1/tenants/a/clusters/nope/evaluate", apiv1.EvaluateRequest{Review: review(t, "admission.k8s.io/v1", "shop", pod)}); code != 404 {
		t.Errorf("unknown cluster = %d", code)
	}
}

const candidatePolicy = `{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
  "metadata": {"name": "no-api-pods"},
  "spec": {"failurePolicy": "Fail",
    "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]},
    "matchConditions": [{"name": "labelled", "expression": "has(object.metadata.labels)"}],
    "validations": [{"expression": "object.metadata.labels['app'] != 'api'", "message": "no api pods here"}]}}`

const candidateBinding = `{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
  "metadata": {"name": "no-api-pods"}, "spec": {"policyName": "no-api-pods", "validationActions": ["Deny"]}}`

func TestEvaluateCandidates(t *testing.T) {
	e := newEnv(t)
	e.cluster(e.tenantA.ID, "prod")
	e.apply(e.adminA, "/api/v1/tenants/a/apply", baselineBody(t))
	rev := review(t, "admission.k8s.io/v1", "shop", sample(t, "pod.json"))

	res := e.evaluate(e.viewerA, "prod", apiv1.EvaluateRequest{Review: rev,
		Objects: []json.RawMessage{json.RawMessage(candidatePolicy), json.RawMessage(candidateBinding)}})
	if !res.Candidate || res.SnapshotVersion != 20 || !strings.Contains(string(res.Review), `"allowed":false`) ||
		!strings.Contains(string(res.Review), "no api pods here") {
		t.Fatalf("candidate overlay = %s", res.Review)
	}
	if len(res.Trace) != 11 {
		t.Fatalf("trace of the overlay has %d entries, want the baseline's 10 and the candidate", len(res.Trace))
	}
	var tr apiv1.BindingTrace
	for _, x := range res.Trace {
		if x.Policy == "no-api-pods" {
			tr = x
		}
	}
	if !tr.Matched || tr.Outcome != "Violation" || len(tr.MatchConditions) != 1 || tr.MatchConditions[0].Name != "labelled" ||
		tr.MatchConditions[0].Result != "true" || tr.Validations[0].Message != "no api pods here" || tr.Cost <= 0 {
		t.Fatalf("candidate trace = %+v", tr)
	}

	// Replace: the candidates alone, as a List.
	list := `{"apiVersion": "v1", "kind": "List", "items": [` + candidatePolicy + "," + candidateBinding + `]}`
	res = e.evaluate(e.viewerA, "prod", apiv1.EvaluateRequest{Review: rev, Replace: true, Objects: []json.RawMessage{json.RawMessage(list)}})
	if len(res.Trace) != 1 || !strings.Contains(string(res.Review), `"allowed":false`) {
		t.Fatalf("replace = %s %+v", res.Review, res.Trace)
	}
	// Replace with nothing: no policy at all.
	res = e.evaluate(e.viewerA, "prod", apiv1.EvaluateRequest{Review: rev, Replace: true})
	if len(res.Trace) != 0 || !strings.Contains(string(res.Review), `"allowed":true`) {
		t.Fatalf("replace with nothing = %s", res.Review)
	}

	// Nothing was stored.
	var all apiv1.List[json.RawMessage]
	e.doJSON(e.viewerA, "GET", "/api/v1/tenants/a/objects", nil, http.StatusOK, &all)
	if v, _ := e.s.Policies.TenantVersion(context.Background(), e.tenantA.ID); len(all.Items) != 20 || v != 20 {
		t.Fatalf("candidates were stored: %d objects, version %d", len(all.Items), v)
	}

	badCEL := strings.Replace(candidatePolicy, "!= 'api'", "!= ", 1)
	code, raw := e.do(e.viewerA, "POST", "/api/v1/tenants/a/clusters/prod/evaluate",
		apiv1.EvaluateRequest{Review: rev, Objects: []json.RawMessage{json.RawMessage(candidateBinding), json.RawMessage(badCEL)}})
	_, _, _, causes := statusOf(t, raw)
	if code != 422 || len(causes) != 1 || !strings.HasPrefix(causes[0], `objects[1].spec.validations[0].expression: ValidatingAdmissionPolicy.admissionregistration.k8s.io "no-api-pods"`) {
		t.Fatalf("bad candidate = %d %s", code, raw)
	}
}

func TestOtherTenantsObjectsLookAbsent(t *testing.T) {
	e := newEnv(t)
	e.apply(e.adminA, "/api/v1/tenants/a/apply", baselineBody(t)+"---\n"+paramsBody)
	e.cluster(e.tenantB.ID, "prod")
	msg := func(token, path string) (int, string) {
		code, raw := e.do(token, "GET", path, nil)
		_, _, m, _ := statusOf(t, raw)
		return code, m
	}
	// Tenant b asks for tenant a's object and for one nobody has: the
	// same answer, names aside.
	for _, kind := range []string{"vap", "configmap", "limits"} {
		query := ""
		if kind == "configmap" {
			query = "?namespace=shop"
		}
		name := map[string]string{"vap": "baseline-no-privileged", "configmap": "cm1", "limits": "l1"}[kind]
		for _, sub := range []string{"", "/history", "/versions/1", "/diff?from=1"} {
			sep := query
			if strings.Contains(sub, "?") && query != "" {
				sep = "&" + query[1:]
			}
			c1, m1 := msg(e.adminB, "/api/v1/tenants/b/objects/"+kind+"/"+name+sub+sep)
			c2, m2 := msg(e.adminB, "/api/v1/tenants/b/objects/"+kind+"/zz-absent"+sub+sep)
			if c1 != 404 || c2 != 404 || m1 != strings.ReplaceAll(m2, "zz-absent", name) {
				t.Errorf("%s%s: tenant a's object = %d %q, an absent one = %d %q", kind, sub, c1, m1, c2, m2)
			}
		}
	}
	var l apiv1.List[json.RawMessage]
	e.doJSON(e.adminB, "GET", "/api/v1/tenants/b/objects", nil, http.StatusOK, &l)
	if len(l.Items) != 0 {
		t.Fatalf("tenant b lists %d objects", len(l.Items))
	}
	if code, _ := e.do(e.adminB, "DELETE", "/api/v1/tenants/b/objects/vap/baseline-no-privileged", nil); code != 404 {
		t.Fatalf("tenant b deleted tenant a's policy: %d", code)
	}
	res := e.apply(e.adminB, "/api/v1/tenants/b/apply", "apiVersion: example.com/v1\nkind: Limits\nmetadata: {name: l1}\n")
	if res.Results[0].Action != apiv1.ActionCreated || res.Version != 1 || len(res.Results[0].Warnings) != 1 {
		t.Fatalf("tenant b's apply = %+v", res)
	}
	var ev apiv1.EvaluateResponse
	e.doJSON(e.adminB, "POST", "/api/v1/tenants/b/clusters/prod/evaluate",
		apiv1.EvaluateRequest{Review: review(t, "admission.k8s.io/v1", "shop", `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"securityContext": {}, "containers": [{"name": "c", "image": "x:latest", "securityContext": {"privileged": true}}]}}`)},
		http.StatusOK, &ev)
	if len(ev.Trace) != 0 || !strings.Contains(string(ev.Review), `"allowed":true`) {
		t.Fatalf("tenant b evaluated tenant a's policies: %s", ev.Review)
	}
}

func TestEvaluateWarningsAndAuditAnnotationsAsTheWebhook(t *testing.T) {
	e := newEnv(t)
	cl := e.cluster(e.tenantA.ID, "prod")
	e.apply(e.adminA, "/api/v1/tenants/a/apply", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: team-audit}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
  validations:
  - expression: "object.metadata.labels['team'] == 'platform'"
    messageExpression: "'team ' + object.metadata.labels['team'] + ' is not platform'"
  auditAnnotations:
  - key: team
    valueExpression: "string(object.metadata.labels['team'])"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: team-audit}
spec: {policyName: team-audit, validationActions: [Warn, Audit]}
`)
	rev := review(t, "admission.k8s.io/v1", "shop", sample(t, "pod.json"))
	res := e.evaluate(e.viewerA, "prod", apiv1.EvaluateRequest{Review: rev})
	if want := e.webhookAnswer(cl, rev); !bytes.Equal(res.Review, want) {
		t.Fatalf("evaluate review:\n%s\nwebhook:\n%s", res.Review, want)
	}
	var out struct {
		Response struct {
			Allowed          bool
			Warnings         []string
			AuditAnnotations map[string]string
		}
	}
	if err := json.Unmarshal(res.Review, &out); err != nil {
		t.Fatal(err)
	}
	r := out.Response
	if !r.Allowed || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "team checkout is not platform") ||
		r.AuditAnnotations["team-audit.team"] != "checkout" || r.AuditAnnotations["validation_failure"] == "" {
		t.Fatalf("response = %+v", r)
	}
	if len(res.Trace) != 1 || len(res.Trace[0].AuditAnnotations) != 1 || res.Trace[0].AuditAnnotations[0].Name != "team" ||
		res.Trace[0].AuditAnnotations[0].Result != "checkout" || res.Trace[0].Outcome != "Violation" {
		t.Fatalf("trace = %+v", res.Trace)
	}
}
