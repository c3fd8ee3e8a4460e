package ui

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestViewerChangesNothing: a viewer reads every page of the tenant, sees
// no button that changes anything, and every change it posts anyway is
// refused by the API.
func TestViewerChangesNothing(t *testing.T) {
	e := newEnv(t)
	op := e.signIn(e.operator)
	if code, page := op.post("/ui/t/a/clusters", url.Values{"name": {"prod"}, "auth": {"token"}}); code != 200 {
		t.Fatalf("create cluster: %d\n%s", code, page)
	}
	if code, _ := op.post("/ui/t/a/apply", url.Values{"yaml": {policyYAML}}); code != 303 {
		t.Fatalf("apply: %d", code)
	}
	obj := "/ui/t/a/objects/ValidatingAdmissionPolicy/no-bad"

	v := e.signIn(e.viewerA)
	for _, path := range []string{"/ui/t/a/clusters", "/ui/t/a/policies", obj, "/ui/t/a/test", "/ui/t/a/decisions", "/ui/t/a/audit"} {
		code, page := v.get(path)
		mustStatus(t, "viewer "+path, code, 200, page)
		for _, button := range []string{">Apply<", ">Validate<", ">Revoke<", ">Rotate<", ">Add cluster<", ">New policy<", ">Issue credential<", "Roll back to"} {
			if strings.Contains(page, button) {
				t.Errorf("viewer sees %q on %s", button, path)
			}
		}
	}
	if _, page := v.get(obj); !strings.Contains(page, "readonly>") {
		t.Error("the viewer's editor is not read-only")
	}
	changed := strings.Replace(policyYAML, "bad pods", "changed", 1)
	for _, c := range []struct {
		path string
		form url.Values
	}{
		{"/ui/t/a/apply", url.Values{"yaml": {changed}}},
		{"/ui/t/a/validate", url.Values{"yaml": {changed}}},
		{obj + "/rollback", url.Values{"version": {"1"}, "confirmed": {"yes"}}},
		{"/ui/t/a/clusters", url.Values{"name": {"x"}, "auth": {"token"}}},
		{"/ui/t/a/clusters/prod/credentials", url.Values{"auth": {"token"}}},
		{"/ui/t/a/clusters/prod/credentials/1/revoke", url.Values{"confirmed": {"yes"}}},
		{"/ui/t/a/clusters/prod/credentials/1/rotate", url.Values{"confirmed": {"yes"}}},
		{"/ui/tenants", url.Values{"name": {"x"}}},
	} {
		code, page := v.post(c.path, c.form)
		if code != http.StatusForbidden && !strings.Contains(page, `class="error"`) {
			t.Errorf("viewer POST %s = %d, want refused:\n%s", c.path, code, page)
		}
		if code == http.StatusSeeOther {
			t.Errorf("viewer POST %s succeeded", c.path)
		}
	}
	if _, page := op.get(obj); strings.Contains(page, "changed") {
		t.Error("the viewer changed the policy")
	}
	if _, page := op.get("/ui/t/a/clusters"); strings.Contains(page, "<h2 id=\"cluster-x\">") {
		t.Error("the viewer created a cluster")
	}
}

// TestTenantsAreIsolated: tenant b's admin never sees tenant a's data,
// and is told that a does not exist, as the API does.
func TestTenantsAreIsolated(t *testing.T) {
	e := newEnv(t)
	op := e.signIn(e.operator)
	if code, _ := op.post("/ui/t/a/clusters", url.Values{"name": {"secret-cluster"}, "auth": {"token"}}); code != 200 {
		t.Fatal("create cluster")
	}
	if code, _ := op.post("/ui/t/a/apply", url.Values{"yaml": {policyYAML}}); code != 303 {
		t.Fatal("apply")
	}
	b := e.signIn(e.adminB)
	for _, path := range []string{"/ui/t/a/clusters", "/ui/t/a/policies", "/ui/t/a/objects/ValidatingAdmissionPolicy/no-bad",
		"/ui/t/a/objects/ValidatingAdmissionPolicy/no-bad/diff?from=1&to=1", "/ui/t/a/test", "/ui/t/a/decisions", "/ui/t/a/audit",
		"/ui/t/a/clusters/secret-cluster/files/webhooks.yaml"} {
		code, page := b.get(path)
		if code != http.StatusNotFound || !strings.Contains(page, `tenant &#34;a&#34; not found`) {
			t.Errorf("tenant b GET %s = %d, want 404 tenant not found:\n%s", path, code, page)
		}
		if strings.Contains(page, "secret-cluster") || strings.Contains(page, "no-bad") && !strings.Contains(path, "no-bad") {
			t.Errorf("tenant b sees tenant a's data on %s", path)
		}
	}
	for _, c := range []struct {
		path string
		form url.Values
	}{
		{"/ui/t/a/apply", url.Values{"yaml": {policyYAML}}},
		{"/ui/t/a/clusters", url.Values{"name": {"x"}, "auth": {"token"}}},
		{"/ui/t/a/test", url.Values{"cluster": {"secret-cluster"}, "review": {badPodReview}}},
	} {
		if code, _ := b.post(c.path, c.form); code != http.StatusNotFound {
			t.Errorf("tenant b POST %s = %d, want 404", c.path, code)
		}
	}
	for _, path := range []string{"/ui/tenants", "/ui/decisions/summary"} {
		if code, _ := b.get(path); code != http.StatusForbidden {
			t.Errorf("tenant admin GET %s = %d, want 403", path, code)
		}
	}
	// The navigation of a tenant's user leads to its own tenant only.
	// The fleet's decisions too: a tenant=a filter shows b's own page.
	for _, nav := range []string{"/ui/clusters", "/ui/policies", "/ui/decisions", "/ui/decisions?tenant=a&range=30d", "/ui/audit"} {
		res, _ := b.getRes(nav)
		if loc := res.Header.Get("Location"); !strings.HasPrefix(loc, "/ui/t/b/") {
			t.Errorf("tenant b's %s goes to %q", nav, loc)
		}
	}
	if _, page := b.get("/ui/t/b/clusters"); strings.Contains(page, ">Tenants</a>") {
		t.Error("a tenant admin sees the Tenants link")
	}
}

// TestEscaping: names, messages and user names are attacker-controlled;
// every page shows them as text.
func TestEscaping(t *testing.T) {
	e := newEnv(t)
	op := e.signIn(e.operator)
	const evil = `<img src=x onerror=alert(1)>`
	if code, _ := op.post("/ui/tenants", url.Values{"name": {"evil"}, "displayName": {evil}}); code != 303 {
		t.Fatal("create tenant")
	}
	if code, _ := op.post("/ui/t/a/clusters", url.Values{"name": {"prod"}, "auth": {"token"}}); code != 200 {
		t.Fatal("create cluster")
	}
	if code, _ := op.post("/ui/t/a/apply", url.Values{"yaml": {policyYAML}}); code != 303 {
		t.Fatal("apply")
	}
	_, tenants := op.get("/ui/tenants")
	_, policy := op.get("/ui/t/a/objects/ValidatingAdmissionPolicy/no-bad")
	_, test := op.post("/ui/t/a/test", url.Values{"cluster": {"prod"}, "review": {strings.Replace(badPodReview, "mallory", evil, 1)}})
	_, bad := op.post("/ui/t/a/apply", url.Values{"yaml": {"kind: " + evil}})
	_, missing := op.get("/ui/t/a/objects/ValidatingAdmissionPolicy/" + url.PathEscape(evil))
	id := recordDenialBy(t, e, evil)
	_, decisionsPage := op.get("/ui/t/a/decisions")
	_, fleetPage := op.get("/ui/decisions")
	if !strings.Contains(fleetPage, "&lt;img src=x onerror=alert(1)&gt;") {
		t.Error("the fleet's decisions page does not show the user name as text")
	}
	link := regexp.MustCompile(`href="(/ui/t/a/decisions/` + id + `\?at=[^"]+)"`).FindStringSubmatch(decisionsPage)
	if link == nil {
		t.Fatalf("no link to the decision:\n%s", decisionsPage)
	}
	_, decisionPage := op.get(strings.ReplaceAll(link[1], "&amp;", "&"))
	if !strings.Contains(decisionsPage, "&lt;img src=x onerror=alert(1)&gt;") || !strings.Contains(decisionPage, "&lt;img src=x onerror=alert(1)&gt;") {
		t.Error("the decisions pages do not show the user name as text")
	}
	for name, page := range map[string]string{"tenants": tenants, "policy": policy, "test": test, "apply error": bad, "not found": missing,
		"decisions": decisionsPage, "decision": decisionPage, "fleet decisions": fleetPage} {
		if strings.Contains(page, "<img") || strings.Contains(page, "<script>alert") {
			t.Errorf("%s page holds unescaped markup:\n%s", name, page)
		}
	}
	if !strings.Contains(tenants, "&lt;img src=x onerror=alert(1)&gt;") {
		t.Error("the tenants page does not show the display name as text")
	}
	if !strings.Contains(test, "&lt;script&gt;alert(1)&lt;/script&gt; bad pods are refused") {
		t.Errorf("the test result does not show the message as text:\n%s", test)
	}
}
