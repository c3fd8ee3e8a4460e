package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

func mutatingSample(t *testing.T) string {
	t.Helper()
	var parts []string
	for _, f := range []string{"policies.yaml", "bindings.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "samples", "mutating", f))
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, string(b))
	}
	return strings.Join(parts, "\n---\n")
}

// MutatingAdmissionPolicies and their bindings go through the same routes
// as the validating kinds: apply, get by any of their names, list, history,
// diff, rollback and delete.
func TestMutatingPolicyLifecycle(t *testing.T) {
	e := newEnv(t)
	res := e.apply(e.adminA, "/api/v1/tenants/a/apply", mutatingSample(t))
	if a := actions(res); a["created"] != 10 {
		t.Fatalf("apply = %+v", res)
	}
	var rv1 int64
	for _, r := range res.Results {
		if r.Kind == "MutatingAdmissionPolicy" && r.Name == "team-label" {
			rv1 = r.ResourceVersion
		}
	}
	for _, p := range []string{"map/team-label", "MAP/team-label", "MutatingAdmissionPolicy/team-label",
		"mutatingadmissionpolicies/team-label", "mutatingadmissionpolicy/team-label"} {
		var o map[string]any
		e.doJSON(e.viewerA, "GET", "/api/v1/tenants/a/objects/"+p, nil, http.StatusOK, &o)
		if o["kind"] != "MutatingAdmissionPolicy" {
			t.Fatalf("GET %s = %v", p, o)
		}
	}
	for _, p := range []string{"mapb/team-label", "mutatingadmissionpolicybindings/team-label", "MutatingAdmissionPolicyBinding/team-label"} {
		var o map[string]any
		e.doJSON(e.viewerA, "GET", "/api/v1/tenants/a/objects/"+p, nil, http.StatusOK, &o)
		if o["kind"] != "MutatingAdmissionPolicyBinding" {
			t.Fatalf("GET %s = %v", p, o)
		}
	}
	for _, tc := range []struct {
		query string
		n     int
	}{{"?kind=map", 5}, {"?kind=mapb", 5}, {"?kind=mutatingadmissionpolicies", 5}, {"?type=policies", 5},
		{"?type=bindings", 5}, {"?type=params", 0}, {"?kind=vap", 0}, {"?kind=validatingadmissionpolicies", 0}} {
		var l apiv1.List[json.RawMessage]
		e.doJSON(e.viewerA, "GET", "/api/v1/tenants/a/objects"+tc.query, nil, http.StatusOK, &l)
		if len(l.Items) != tc.n {
			t.Errorf("%s: %d objects, want %d", tc.query, len(l.Items), tc.n)
		}
	}

	// An update in v1alpha1 is stored as sent.
	alpha := `apiVersion: admissionregistration.k8s.io/v1alpha1
kind: MutatingAdmissionPolicy
metadata: {name: team-label}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"example.com/owner": request.namespace}}}'
`
	rv2 := e.apply(e.adminA, "/api/v1/tenants/a/apply", alpha).Version
	obj := "/api/v1/tenants/a/objects/map/team-label"
	var hist apiv1.List[apiv1.Version]
	e.doJSON(e.viewerA, "GET", obj+"/history", nil, http.StatusOK, &hist)
	if len(hist.Items) != 2 || hist.Items[0].Version != rv2 || hist.Items[0].APIVersion != "admissionregistration.k8s.io/v1alpha1" ||
		hist.Items[1].Version != rv1 || hist.Items[1].APIVersion != "admissionregistration.k8s.io/v1" {
		t.Fatalf("history = %+v", hist.Items)
	}
	var d apiv1.Diff
	e.doJSON(e.viewerA, "GET", fmt.Sprintf("%s/diff?from=%d", obj, rv1), nil, http.StatusOK, &d)
	if !strings.Contains(d.Diff, "-apiVersion: admissionregistration.k8s.io/v1\n") ||
		!strings.Contains(d.Diff, "+apiVersion: admissionregistration.k8s.io/v1alpha1\n") || !strings.Contains(d.Diff, "example.com/owner") {
		t.Fatalf("diff = %s", d.Diff)
	}
	var rb apiv1.ApplyItem
	e.doJSON(e.adminA, "POST", obj+"/rollback", apiv1.Rollback{ToVersion: rv1}, http.StatusOK, &rb)
	if rb.Action != apiv1.ActionRolledBack || rb.ResourceVersion != rv2+1 || rb.APIVersion != "admissionregistration.k8s.io/v1" {
		t.Fatalf("rollback = %+v", rb)
	}
	var del apiv1.ApplyItem
	e.doJSON(e.adminA, "DELETE", obj+fmt.Sprintf("?resourceVersion=%d", rv2+1), nil, http.StatusOK, &del)
	if del.Kind != "MutatingAdmissionPolicy" || del.Action != apiv1.ActionDeleted {
		t.Fatalf("delete = %+v", del)
	}
	if code, _ := e.do(e.viewerA, "GET", obj, nil); code != 404 {
		t.Fatalf("GET after delete = %d", code)
	}
}

// A bad mutating policy is refused as a bad validating one is: 422, the
// document, the object and the field named.
func TestApplyRefusesBadMutatingPolicy(t *testing.T) {
	e := newEnv(t)
	bad := `apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata: {name: bad}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration: {expression: "Object{spec: Object.spec{replicas: object.spec.nope +}}"}
`
	noReinvocation := strings.Replace(strings.Replace(bad, "  reinvocationPolicy: Never\n", "", 1), "name: bad", "name: bad2", 1)
	code, raw := e.do(e.adminA, "POST", "/api/v1/tenants/a/apply", bad+"---\n"+noReinvocation)
	if code != 422 {
		t.Fatalf("= %d %s", code, raw)
	}
	_, reason, msg, causes := statusOf(t, raw)
	for _, want := range []string{
		`documents[0].spec.mutations[0].applyConfiguration.expression: MutatingAdmissionPolicy.admissionregistration.k8s.io "bad": Invalid value`,
		`documents[1].spec.reinvocationPolicy: MutatingAdmissionPolicy.admissionregistration.k8s.io "bad2": Required value`,
	} {
		if !slices.ContainsFunc(causes, func(c string) bool { return strings.HasPrefix(c, want) }) {
			t.Errorf("no cause %q in %q", want, causes)
		}
	}
	if reason != "Invalid" || !strings.Contains(msg, "documents[0].spec.mutations[0].applyConfiguration.expression") {
		t.Fatalf("reason %q, message %q", reason, msg)
	}
}

// With mutate, evaluate answers as the /mutate webhook: the AdmissionReview
// byte for byte, and the object its patch makes.
func TestEvaluateMutates(t *testing.T) {
	e := newEnv(t)
	cl := e.cluster(e.tenantA.ID, "prod")
	e.apply(e.adminA, "/api/v1/tenants/a/apply", mutatingSample(t))
	e.doJSON(e.adminA, "PUT", "/api/v1/tenants/a/clusters/prod/namespaces", namespacesYAML, http.StatusOK, nil)
	rev := review(t, "admission.k8s.io/v1", "shop", sample(t, "pod.json"))

	res := e.evaluate(e.viewerA, "prod", apiv1.EvaluateRequest{Review: rev, Mutate: true})
	if want := e.webhookAnswerAt(cl, rev, evaluator.Mutating); !bytes.Equal(res.Review, want) {
		t.Fatalf("evaluate review:\n%s\nwebhook:\n%s", res.Review, want)
	}
	var out struct {
		Response struct {
			Allowed   bool
			PatchType string
			Patch     []byte
		}
	}
	if err := json.Unmarshal(res.Review, &out); err != nil {
		t.Fatal(err)
	}
	if !out.Response.Allowed || out.Response.PatchType != "JSONPatch" || len(out.Response.Patch) == 0 {
		t.Fatalf("response = %+v", out.Response)
	}
	var req struct {
		Request struct{ Object json.RawMessage }
	}
	if err := json.Unmarshal(rev, &req); err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(out.Response.Patch)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := p.Apply(req.Request.Object)
	if err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	if err := json.Unmarshal(patched, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(res.Object, &want); err != nil {
		t.Fatalf("object %q: %v", res.Object, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("patched request object:\n%s\nanswer's object:\n%s", patched, res.Object)
	}
	if labels, _ := want["metadata"].(map[string]any)["labels"].(map[string]any); labels["example.com/team"] != "shop" {
		t.Fatalf("the team label is missing: %v", labels)
	}

	// The trace shows each mutation's outcome, for the explain output.
	var team *apiv1.BindingTrace
	for i, b := range res.Trace {
		if b.Policy == "team-label" {
			team = &res.Trace[i]
		}
	}
	if team == nil || len(team.Mutations) != 1 {
		t.Fatalf("no mutation traced for team-label: %+v", res.Trace)
	}
	if m := team.Mutations[0]; m.Index != 0 || m.PatchType != "ApplyConfiguration" || !m.Changed || m.Error != "" ||
		m.Cost <= 0 || !strings.Contains(m.Expression, "example.com/team") || team.Cost < m.Cost {
		t.Fatalf("team-label's mutation: %+v (binding cost %d)", m, team.Cost)
	}

	// Without mutate the same review is answered by the validating
	// policies (none here): allowed, no patch, no object.
	res = e.evaluate(e.viewerA, "prod", apiv1.EvaluateRequest{Review: rev})
	if res.Object != nil || bytes.Contains(res.Review, []byte(`"patch"`)) {
		t.Fatalf("validate answered with a mutation: %s %s", res.Review, res.Object)
	}
}
