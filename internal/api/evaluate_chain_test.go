package api

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// chainPolicies require the team label the mutating sample adds, and make
// a pod labelled break=yes fail its mutation.
const chainPolicies = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: team-required}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
  validations:
  - expression: "'example.com/team' in object.metadata.labels"
    message: the team label is required
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: team-required}
spec: {policyName: team-required, validationActions: [Deny]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: breaker}
spec:
  failurePolicy: Fail
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
  matchConditions:
  - {name: break, expression: "object.metadata.labels.exists(k, k == 'break')"}
  mutations:
  - patchType: JSONPatch
    jsonPatch: {expression: "[JSONPatch{op: 'remove', path: '/nope'}]"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: breaker}
spec: {policyName: breaker}
`

// With chain, evaluate runs the mutating webhook when a mutating binding
// matches and the validating one on the object it made, each answer byte
// for byte its webhook's; otherwise the validating webhook alone.
func TestEvaluateChain(t *testing.T) {
	e := newEnv(t)
	cl := e.cluster(e.tenantA.ID, "prod")
	e.doJSON(e.adminA, "PUT", "/api/v1/tenants/a/clusters/prod/namespaces", namespacesYAML, http.StatusOK, nil)
	e.apply(e.adminA, "/api/v1/tenants/a/apply", chainPolicies)
	pod := sample(t, "pod.json")
	rev := review(t, "admission.k8s.io/v1", "shop", pod)

	// No mutating binding matches a pod without the break label yet (the
	// sample is not applied): the validating webhook alone, which denies.
	res := e.evaluate(e.viewerA, "prod", apiv1.EvaluateRequest{Review: rev, Chain: true})
	if strings.Join(res.Evaluated, ",") != "validate" || res.Mutation != nil || res.Object != nil {
		t.Fatalf("evaluated %v, mutation %+v", res.Evaluated, res.Mutation)
	}
	if want := e.webhookAnswerAt(cl, rev, evaluator.Validating); !bytes.Equal(res.Review, want) || !bytes.Contains(res.Review, []byte("the team label is required")) {
		t.Fatalf("review:\n%s\nwebhook:\n%s", res.Review, want)
	}

	// With the sample's team label policy, the mutating webhook runs first
	// and the validating one allows the labelled pod.
	e.apply(e.adminA, "/api/v1/tenants/a/apply", mutatingSample(t))
	res = e.evaluate(e.viewerA, "prod", apiv1.EvaluateRequest{Review: rev, Chain: true})
	if strings.Join(res.Evaluated, ",") != "mutate,validate" || res.Mutation == nil || res.Object == nil {
		t.Fatalf("evaluated %v, mutation %v, object %s", res.Evaluated, res.Mutation, res.Object)
	}
	if want := e.webhookAnswerAt(cl, rev, evaluator.Mutating); !bytes.Equal(res.Mutation.Review, want) {
		t.Fatalf("mutating review:\n%s\nwebhook:\n%s", res.Mutation.Review, want)
	}
	mutated, err := withObject(rev, res.Object)
	if err != nil {
		t.Fatal(err)
	}
	if want := e.webhookAnswerAt(cl, mutated, evaluator.Validating); !bytes.Equal(res.Review, want) || !bytes.Contains(res.Review, []byte(`"allowed":true`)) {
		t.Fatalf("validating review:\n%s\nwebhook on the mutated object:\n%s", res.Review, want)
	}
	if len(res.Mutation.Trace) == 0 || len(res.Trace) == 0 {
		t.Fatalf("traces: mutation %d, validation %d", len(res.Mutation.Trace), len(res.Trace))
	}

	// A mutation that denies ends the chain.
	broken := review(t, "admission.k8s.io/v1", "shop", strings.Replace(pod, `"labels": {`, `"labels": {"break": "yes",`, 1))
	res = e.evaluate(e.viewerA, "prod", apiv1.EvaluateRequest{Review: broken, Chain: true})
	if strings.Join(res.Evaluated, ",") != "mutate" || res.Mutation == nil || (res.Review != nil && string(res.Review) != "null") ||
		!bytes.Contains(res.Mutation.Review, []byte(`"allowed":false`)) {
		t.Fatalf("evaluated %v, review %s, mutation %+v", res.Evaluated, res.Review, res.Mutation)
	}

	// Without chain, as before.
	res = e.evaluate(e.viewerA, "prod", apiv1.EvaluateRequest{Review: rev})
	if strings.Join(res.Evaluated, ",") != "validate" || res.Mutation != nil || !bytes.Contains(res.Review, []byte("the team label is required")) {
		t.Fatalf("validate: evaluated %v, review %s", res.Evaluated, res.Review)
	}
	if code, raw := e.do(e.viewerA, "POST", "/api/v1/tenants/a/clusters/prod/evaluate",
		apiv1.EvaluateRequest{Review: rev, Chain: true, Mutate: true}); code != 422 || !strings.Contains(string(raw), "chain") {
		t.Fatalf("chain with mutate: %d %s", code, raw)
	}
}
