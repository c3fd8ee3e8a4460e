package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/catalog"
)

func TestCatalogListAndShow(t *testing.T) {
	e := newEnv(t)
	var list apiv1.List[apiv1.CatalogEntry]
	e.doJSON(e.viewerA, "GET", "/api/v1/catalog", nil, http.StatusOK, &list)
	if len(list.Items) != len(catalog.List()) {
		t.Fatalf("%d entries, want %d", len(list.Items), len(catalog.List()))
	}
	byName := map[string]apiv1.CatalogEntry{}
	for _, it := range list.Items {
		if it.YAML != "" || it.Version == "" {
			t.Errorf("list item %+v: no YAML in lists, and a version", it)
		}
		byName[it.Name] = it
	}
	if _, ok := byName["pod-security-restricted"]; !ok {
		t.Fatalf("no pod-security-restricted in %v", byName)
	}
	if p := byName["trusted-registries"].Params; len(p) != 1 || p[0].Key != "registries" || p[0].ConfigMap != "trusted-registries" {
		t.Fatalf("trusted-registries params = %+v", p)
	}

	var one apiv1.CatalogEntry
	e.doJSON(e.viewerA, "GET", "/api/v1/catalog/pod-security-baseline", nil, http.StatusOK, &one)
	if !strings.Contains(one.YAML, "kind: ValidatingAdmissionPolicy\n") || one.Name != "pod-security-baseline" {
		t.Fatalf("show = %+v", one)
	}
	for _, tc := range []struct{ token, method, path string }{
		{e.viewerA, "GET", "/api/v1/catalog/nope"},
		{e.adminA, "POST", "/api/v1/tenants/a/catalog/nope/install"},
		{e.adminA, "POST", "/api/v1/tenants/a/catalog/nope/upgrade"},
		{e.adminB, "POST", "/api/v1/tenants/a/catalog/require-probes/install"}, // not b's tenant
	} {
		code, raw := e.do(tc.token, tc.method, tc.path, nil)
		if code != http.StatusNotFound {
			t.Errorf("%s %s = %d %s, want 404", tc.method, tc.path, code, raw)
		}
	}
	if code, raw := e.do(e.viewerA, "POST", "/api/v1/tenants/a/catalog/require-probes/install", nil); code != http.StatusForbidden {
		t.Errorf("a viewer installed: %d %s", code, raw)
	}
	if code, _ := e.do("", "GET", "/api/v1/catalog", nil); code != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/catalog without a token = %d", code)
	}
}

func TestCatalogInstall(t *testing.T) {
	e := newEnv(t)
	path := "/api/v1/tenants/a/catalog/pod-security-restricted/install"
	var res apiv1.CatalogResult
	e.doJSON(e.adminA, "POST", path+"?dryRun=true", " \n", http.StatusOK, &res) // a blank body takes the defaults
	if !res.DryRun || len(res.Results) != 2 || res.Results[0].Action != apiv1.ActionCreated || res.ToVersion == "" {
		t.Fatalf("dry run = %+v", res)
	}
	if got := e.installedVersions()["pod-security-restricted"]; got != "" {
		t.Fatalf("a dry run installed version %q", got)
	}

	for _, tc := range []struct {
		body  string
		field string
	}{
		{`{"action": "Block"}`, "action"},
		{`{"clusterSelector": "env in prod"}`, "clusterSelector"},
		{`{"selector": "env=prod"}`, ""}, // a misspelt option is refused, not ignored
	} {
		code, raw := e.do(e.adminA, "POST", path, tc.body)
		_, _, msg, causes := statusOf(t, raw)
		if tc.field == "" {
			if code != http.StatusBadRequest || !strings.Contains(msg, "selector") {
				t.Errorf("%s = %d %s", tc.body, code, raw)
			}
			continue
		}
		if code != http.StatusUnprocessableEntity || len(causes) != 1 || !strings.HasPrefix(causes[0], tc.field+": ") {
			t.Errorf("%s = %d %s", tc.body, code, raw)
		}
	}

	res = apiv1.CatalogResult{}
	e.doJSON(e.adminA, "POST", path, apiv1.CatalogInstall{Action: "Warn", ClusterSelector: "env=prod"}, http.StatusOK, &res)
	if res.DryRun || len(res.Results) != 2 || res.Version != 2 {
		t.Fatalf("install = %+v", res)
	}
	if got := e.installedVersions()["pod-security-restricted"]; got != res.ToVersion {
		t.Fatalf("installed version %q, want %q", got, res.ToVersion)
	}
	var b struct {
		Metadata struct{ Labels, Annotations map[string]string }
		Spec     struct{ ValidationActions []string }
	}
	e.doJSON(e.viewerA, "GET", "/api/v1/tenants/a/objects/vapb/pod-security-restricted", nil, http.StatusOK, &b)
	if b.Metadata.Labels[catalog.LabelEntry] != "pod-security-restricted" || b.Metadata.Annotations[catalog.AnnotationVersion] != res.ToVersion ||
		b.Metadata.Annotations[catalog.AnnotationClusterSelector] != "env=prod" || len(b.Spec.ValidationActions) != 1 || b.Spec.ValidationActions[0] != "Warn" {
		t.Fatalf("installed binding = %+v", b)
	}
	if last := e.auditEntries()[0]; last.Action != "create" || last.ActorName != "alice" || !strings.HasPrefix(last.Actor, "token:") {
		t.Fatalf("install not audited: %+v", last)
	}
	code, raw := e.do(e.adminA, "POST", path, nil)
	if _, _, msg, _ := statusOf(t, raw); code != http.StatusConflict || !strings.Contains(msg, "already installed") {
		t.Fatalf("second install = %d %s", code, raw)
	}

	// A name the tenant already uses for its own policy is never overwritten.
	e.apply(e.adminA, "/api/v1/tenants/a/apply", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: require-probes}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validations: [{expression: "true"}]
`)
	code, raw = e.do(e.adminA, "POST", "/api/v1/tenants/a/catalog/require-probes/install", nil)
	if _, _, msg, _ := statusOf(t, raw); code != http.StatusConflict || !strings.Contains(msg, "was not installed from catalog entry require-probes") {
		t.Fatalf("install over the tenant's own policy = %d %s", code, raw)
	}
}

// TestCatalogInstallEvaluates installs the restricted Pod Security entry
// and evaluates Pods through the API, as the webhook would.
func TestCatalogInstallEvaluates(t *testing.T) {
	e := newEnv(t)
	e.cluster(e.tenantA.ID, "prod")
	e.doJSON(e.adminA, "POST", "/api/v1/tenants/a/catalog/pod-security-restricted/install", nil, http.StatusOK, nil)
	good := `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop"}, "spec": {
	  "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
	  "containers": [{"name": "web", "image": "nginx:1.27", "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}}`
	bad := strings.Replace(good, `"allowPrivilegeEscalation": false`, `"allowPrivilegeEscalation": false, "privileged": true`, 1)
	for _, tc := range []struct {
		object, denial string
	}{
		{good, ""},
		{bad, `privileged: containers "web" must not set securityContext.privileged=true`},
	} {
		res := e.evaluate(e.viewerA, "prod", apiv1.EvaluateRequest{Review: review(t, "admission.k8s.io/v1", "shop", tc.object)})
		var out struct {
			Response struct {
				Allowed bool
				Status  *struct{ Message string }
			}
		}
		if err := json.Unmarshal(res.Review, &out); err != nil {
			t.Fatal(err)
		}
		if out.Response.Allowed != (tc.denial == "") || (tc.denial != "" && !strings.Contains(out.Response.Status.Message, tc.denial)) {
			t.Errorf("review of %s = %s", tc.object, res.Review)
		}
	}
}

func TestCatalogUpgrade(t *testing.T) {
	e := newEnv(t)
	code, raw := e.do(e.adminA, "POST", "/api/v1/tenants/a/catalog/trusted-registries/upgrade", nil)
	if _, _, msg, _ := statusOf(t, raw); code != http.StatusNotFound || !strings.Contains(msg, "not installed") {
		t.Fatalf("upgrade of an entry not installed = %d %s", code, raw)
	}
	e.doJSON(e.adminA, "POST", "/api/v1/tenants/a/catalog/trusted-registries/install", apiv1.CatalogInstall{Action: "Audit", ClusterSelector: "env=prod"}, http.StatusOK, nil)

	var res apiv1.CatalogResult
	e.doJSON(e.adminA, "POST", "/api/v1/tenants/a/catalog/trusted-registries/upgrade?dryRun=true", nil, http.StatusOK, &res)
	if res.Diff != "" || res.FromVersion != res.ToVersion || len(res.Removed) != 0 {
		t.Fatalf("upgrade of an unchanged install = %+v", res)
	}
	for _, r := range res.Results {
		if r.Action != apiv1.ActionUnchanged {
			t.Fatalf("upgrade of an unchanged install: %+v", res.Results)
		}
	}

	// The tenant sets its registries and edits the policy's message; an
	// object of an older version of the entry is left over.
	e.apply(e.adminA, "/api/v1/tenants/a/apply", `apiVersion: v1
kind: ConfigMap
metadata:
  name: trusted-registries
  namespace: default
  labels: {catalog.portcullis.dev/entry: trusted-registries}
  annotations: {catalog.portcullis.dev/version: "0.9.0"}
data:
  registries: 'quay.io/mine/'
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: trusted-registries-old
  namespace: default
  labels: {catalog.portcullis.dev/entry: trusted-registries}
data: {}
`)
	var pol map[string]any
	e.doJSON(e.viewerA, "GET", "/api/v1/tenants/a/objects/vap/trusted-registries", nil, http.StatusOK, &pol)
	js, _ := json.Marshal(pol)
	e.apply(e.adminA, "/api/v1/tenants/a/apply", strings.Replace(string(js), "images from untrusted registries", "bad images", 1))

	e.doJSON(e.adminA, "POST", "/api/v1/tenants/a/catalog/trusted-registries/upgrade?dryRun=true", nil, http.StatusOK, &res)
	for _, want := range []string{"-    messageExpression: '''bad images: '", "+    messageExpression: '''images from untrusted registries: '",
		"+++ ConfigMap default/trusted-registries-old (removed)", "-    catalog.portcullis.dev/version: 0.9.0", "+    catalog.portcullis.dev/version: " + res.ToVersion} {
		if !strings.Contains(res.Diff, want) {
			t.Errorf("the diff lacks %q:\n%s", want, res.Diff)
		}
	}
	if strings.Contains(res.Diff, "quay.io/mine/") || strings.Contains(res.Diff, "validationActions") || strings.Contains(res.Diff, "cluster-selector") {
		t.Errorf("the diff would change the tenant's choices:\n%s", res.Diff)
	}
	if len(res.Removed) != 1 || res.Removed[0].Name != "trusted-registries-old" || !res.DryRun {
		t.Fatalf("dry-run upgrade = %+v", res)
	}

	res = apiv1.CatalogResult{}
	e.doJSON(e.adminA, "POST", "/api/v1/tenants/a/catalog/trusted-registries/upgrade", nil, http.StatusOK, &res)
	if res.DryRun || len(res.Removed) != 1 || res.Diff == "" {
		t.Fatalf("upgrade = %+v", res)
	}
	if last := e.auditEntries()[0]; last.Action != "delete" || last.Name != "trusted-registries-old" || last.ActorName != "alice" || !strings.HasPrefix(last.Actor, "token:") {
		t.Fatalf("the upgrade's deletion was not audited: %+v", last)
	}
	var cm struct{ Data map[string]string }
	e.doJSON(e.viewerA, "GET", "/api/v1/tenants/a/objects/ConfigMap/trusted-registries?namespace=default", nil, http.StatusOK, &cm)
	if cm.Data["registries"] != "quay.io/mine/" {
		t.Fatalf("the upgrade lost the tenant's param: %+v", cm)
	}
	var b struct {
		Metadata struct{ Annotations map[string]string }
		Spec     struct{ ValidationActions []string }
	}
	e.doJSON(e.viewerA, "GET", "/api/v1/tenants/a/objects/vapb/trusted-registries", nil, http.StatusOK, &b)
	if b.Metadata.Annotations[catalog.AnnotationClusterSelector] != "env=prod" || len(b.Spec.ValidationActions) != 1 || b.Spec.ValidationActions[0] != "Audit" {
		t.Fatalf("the upgrade lost the binding's choices: %+v", b)
	}
	e.doJSON(e.viewerA, "GET", "/api/v1/tenants/a/objects/vap/trusted-registries", nil, http.StatusOK, &pol)
	if js, _ := json.Marshal(pol); strings.Contains(string(js), "bad images") {
		t.Fatal("the upgrade kept the tenant's edit of the policy")
	}
	if code, _ := e.do(e.viewerA, "GET", "/api/v1/tenants/a/objects/ConfigMap/trusted-registries-old?namespace=default", nil); code != http.StatusNotFound {
		t.Fatalf("the left-over object is still there: %d", code)
	}
}

func (e *env) installedVersions() map[string]string {
	e.t.Helper()
	var list apiv1.List[apiv1.CatalogEntry]
	e.doJSON(e.viewerA, "GET", "/api/v1/tenants/a/catalog", nil, http.StatusOK, &list)
	out := map[string]string{}
	for _, it := range list.Items {
		out[it.Name] = it.Installed
	}
	return out
}

// An upgrade applies the new objects and deletes the dropped ones in one
// transaction: when a deletion fails, the tenant keeps the old version
// whole, not the new objects beside the old left-overs.
func TestCatalogUpgradeIsAllOrNothing(t *testing.T) {
	e := newEnv(t)
	e.doJSON(e.adminA, "POST", "/api/v1/tenants/a/catalog/trusted-registries/install", nil, http.StatusOK, nil)
	// An older version: its param's annotation, a policy message edited
	// since, and an object the catalog has dropped.
	e.apply(e.adminA, "/api/v1/tenants/a/apply", `apiVersion: v1
kind: ConfigMap
metadata:
  name: trusted-registries
  namespace: default
  labels: {catalog.portcullis.dev/entry: trusted-registries}
  annotations: {catalog.portcullis.dev/version: "0.9.0"}
data:
  registries: 'quay.io/mine/'
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: trusted-registries-old
  namespace: default
  labels: {catalog.portcullis.dev/entry: trusted-registries}
data: {}
`)
	var pol map[string]any
	e.doJSON(e.viewerA, "GET", "/api/v1/tenants/a/objects/vap/trusted-registries", nil, http.StatusOK, &pol)
	js, _ := json.Marshal(pol)
	e.apply(e.adminA, "/api/v1/tenants/a/apply", strings.Replace(string(js), "images from untrusted registries", "bad images", 1))

	// The database refuses the deletion of the dropped object.
	if _, err := e.pool.Exec(context.Background(), `
		CREATE FUNCTION refuse_delete() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
		CREATE TRIGGER refuse_delete BEFORE UPDATE ON policy_objects FOR EACH ROW
		WHEN (NEW.deleted AND NOT OLD.deleted AND NEW.name = 'trusted-registries-old')
		EXECUTE FUNCTION refuse_delete();`); err != nil {
		t.Fatal(err)
	}
	if code, raw := e.do(e.adminA, "POST", "/api/v1/tenants/a/catalog/trusted-registries/upgrade", nil); code != http.StatusInternalServerError {
		t.Fatalf("upgrade with a failing deletion = %d %s", code, raw)
	}
	var cm struct {
		Metadata struct{ Annotations map[string]string }
	}
	e.doJSON(e.viewerA, "GET", "/api/v1/tenants/a/objects/ConfigMap/trusted-registries?namespace=default", nil, http.StatusOK, &cm)
	if got := cm.Metadata.Annotations[catalog.AnnotationVersion]; got != "0.9.0" {
		t.Fatalf("the param's version after a failed upgrade = %q", got)
	}
	e.doJSON(e.viewerA, "GET", "/api/v1/tenants/a/objects/vap/trusted-registries", nil, http.StatusOK, &pol)
	if js, _ := json.Marshal(pol); !strings.Contains(string(js), "bad images") {
		t.Fatal("a failed upgrade replaced the policy")
	}
	if code, _ := e.do(e.viewerA, "GET", "/api/v1/tenants/a/objects/ConfigMap/trusted-registries-old?namespace=default", nil); code != http.StatusOK {
		t.Fatalf("a failed upgrade deleted the left-over object: %d", code)
	}
}
