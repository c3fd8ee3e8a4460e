package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

const teamMutation = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: add-team}
spec:
  failurePolicy: Fail
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'team': 'platform'}}}"
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: add-team}
spec:
  policyName: add-team
`

// admin test without --mutate or --validate evaluates as the admission
// chain: the mutating webhook when a mutating policy matches, then the
// validating one on the mutated object, and says so; the flags pick one.
func TestCLITestPicksTheEndpoint(t *testing.T) {
	a := operatorCLI(t, newE2E(t, pgtest.URL(t)))
	a.ok("tenant", "create", "acme")
	a.ok("cluster", "create", "prod", "--tenant", "acme", "--out", "prod")
	writeFile(t, "policies.yaml", cliPolicy+"---\n"+cliBinding+"---\n"+teamMutation)
	a.ok("apply", "--tenant", "acme", "-f", "policies.yaml")
	writeFile(t, "no-team.json", podReview("admission.k8s.io/v1", "no-team", "default", noTeamPod, false))
	test := func(flags ...string) string {
		return a.ok(append([]string{"test", "--tenant", "acme", "--cluster", "prod", "-f", "no-team.json"}, flags...)...)
	}

	out := test()
	for _, want := range []string{
		"mutating webhook: allowed\npatch: [{\"op\":\"add\",\"path\":\"/metadata/labels\",\"value\":{\"team\":\"platform\"}}]\n",
		"object after the mutations:\n",
		"\nvalidating webhook, on the mutated object: allowed\n",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("no %q in the chain's output:\n%s", want, out)
		}
	}
	if out := test("--validate"); !strings.HasPrefix(out, "denied (422 Invalid)") || !strings.Contains(out, "the team label is required") {
		t.Fatalf("--validate:\n%s", out)
	}
	if out := test("--mutate"); !strings.HasPrefix(out, "allowed\npatch: ") || strings.Contains(out, "validating") {
		t.Fatalf("--mutate:\n%s", out)
	}
	out = test("--mutate", "--explain")
	if !strings.Contains(out, "add-team (binding add-team):\n  mutation 0 (ApplyConfiguration): Object{metadata: Object.metadata{labels: {'team': 'platform'}}}\n    = changed the object (cost ") {
		t.Fatalf("--mutate --explain:\n%s", out)
	}
	out = test("--explain")
	if !strings.Contains(out, "\nmutating webhook:\nPOLICY") || !strings.Contains(out, "\nvalidating webhook:\nPOLICY") ||
		!strings.Contains(out, "= changed the object") || !strings.Contains(out, "validation 0: has(object.metadata.labels)") {
		t.Fatalf("--explain:\n%s", out)
	}
	var both map[string]struct {
		Response struct{ Allowed bool }
	}
	if err := json.Unmarshal([]byte(test("-o", "json")), &both); err != nil || len(both) != 2 ||
		!both["mutating"].Response.Allowed || !both["validating"].Response.Allowed {
		t.Fatalf("-o json: %v %+v", err, both)
	}
	// A request no mutating policy matches: the validating webhook alone.
	writeFile(t, "update.json", strings.Replace(podReview("admission.k8s.io/v1", "upd", "default", noTeamPod, false), `"operation":"CREATE"`, `"operation":"UPDATE"`, 1))
	if out := a.ok("test", "--tenant", "acme", "--cluster", "prod", "-f", "update.json"); !strings.HasPrefix(out, "validating webhook (no MutatingAdmissionPolicy matches): denied (422 Invalid)") {
		t.Fatalf("an UPDATE:\n%s", out)
	}
}
