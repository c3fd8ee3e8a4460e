package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

// TestCLIMutatingPolicies applies samples/mutating/ with the CLI against a
// real gateway and manages the MutatingAdmissionPolicies and their
// bindings as the validating kinds are managed.
func TestCLIMutatingPolicies(t *testing.T) {
	samples, err := filepath.Abs(filepath.Join("..", "..", "samples", "mutating"))
	if err != nil {
		t.Fatal(err)
	}
	a := operatorCLI(t, newE2E(t, pgtest.URL(t)))
	a.ok("tenant", "create", "acme")

	golden(t, "apply-mutating.txt", a.ok("apply", "--tenant", "acme", "-f", samples+"/"), false)
	if out := a.ok("apply", "--tenant", "acme", "-f", samples); strings.Count(out, " unchanged\n") != 10 {
		t.Fatalf("applying again:\n%s", out)
	}
	golden(t, "get-mutating-policies.txt", a.ok("get", "mutatingadmissionpolicies", "--tenant", "acme"), true)
	for _, kind := range []string{"map", "MutatingAdmissionPolicy", "mutatingadmissionpolicy"} {
		golden(t, "get-mutating-policies.txt", a.ok("get", kind, "--tenant", "acme"), true)
	}
	golden(t, "get-mutating-bindings.txt", a.ok("get", "mapb", "--tenant", "acme"), true)
	golden(t, "get-mutating-bindings.txt", a.ok("get", "mutatingadmissionpolicybindings", "--tenant", "acme"), true)
	if out := a.ok("get", "map", "team-label", "--tenant", "acme", "-o", "yaml"); !strings.Contains(out, "kind: MutatingAdmissionPolicy\n") ||
		!strings.Contains(out, "example.com/team") {
		t.Fatalf("get map team-label:\n%s", out)
	}
	if out := a.ok("get", "policies", "team-label", "--tenant", "acme", "-o", "json"); !strings.Contains(out, `"kind": "MutatingAdmissionPolicy"`) {
		t.Fatalf("get policies team-label:\n%s", out)
	}

	// A bad expression is refused with the file, the document and the field.
	bad := `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: bad}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration: {expression: "Object{metadata: Object.metadata{labels: object.nope +}}"}
`
	writeFile(t, "bad-map.yaml", bad)
	stderr := a.fails(1, "(Invalid, HTTP 422)", "apply", "--tenant", "acme", "-f", "bad-map.yaml")
	if !strings.Contains(stderr, `bad-map.yaml, document 1, field spec.mutations[0].applyConfiguration.expression: MutatingAdmissionPolicy.admissionregistration.k8s.io "bad": Invalid value: compilation failed`) {
		t.Fatalf("the error does not name the document and field:\n%s", stderr)
	}
	a.fails(1, "NotFound", "get", "map", "bad", "--tenant", "acme")

	// An update in v1beta1 (team-label was written at version 7: the
	// directory's bindings.yaml comes first), its history, diff, rollback and deletion.
	writeFile(t, "team-label-v1beta1.yaml", `apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata: {name: team-label}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  reinvocationPolicy: IfNeeded
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"example.com/owner": request.namespace}}}'
`)
	a.ok("apply", "--tenant", "acme", "-f", "team-label-v1beta1.yaml")
	golden(t, "history-mutating.txt", a.ok("history", "--tenant", "acme", "map", "team-label"), true)
	if out := a.ok("diff", "--tenant", "acme", "map", "team-label", "--from", "7"); !strings.Contains(out, "+apiVersion: admissionregistration.k8s.io/v1beta1") ||
		!strings.Contains(out, "+  reinvocationPolicy: IfNeeded") {
		t.Fatalf("diff:\n%s", out)
	}
	golden(t, "rollback-mutating.txt", a.ok("rollback", "--tenant", "acme", "mutatingadmissionpolicies", "team-label", "--to", "7"), false)
	if out := a.ok("get", "map", "team-label", "--tenant", "acme", "-o", "yaml"); !strings.Contains(out, "example.com/team") ||
		!strings.Contains(out, "apiVersion: admissionregistration.k8s.io/v1\n") {
		t.Fatalf("after the rollback:\n%s", out)
	}
	golden(t, "delete-mutating.txt", a.ok("delete", "--tenant", "acme", "mapb", "team-label"), false)
	a.fails(1, "NotFound", "get", "mapb", "team-label", "--tenant", "acme")
}
