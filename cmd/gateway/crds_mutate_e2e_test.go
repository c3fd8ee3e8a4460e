package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/portcullis-dev/portcullis/internal/inventory"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

const gadgetPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: gadget-ports}
spec:
  failurePolicy: Fail
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [gadgets]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{spec: Object.spec{ports: [Object.spec.ports{name: 'metrics', port: 9090}]}}"
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: gadget-ports}
spec:
  policyName: gadget-ports
`

// gadgetsCRD has a keyed list, which a merge without the schema would
// replace rather than merge.
const gadgetsCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"gadgets.example.com"},
 "spec":{"group":"example.com","scope":"Namespaced","names":{"kind":"Gadget","plural":"gadgets"},
  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
   "spec":{"type":"object","properties":{"ports":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],
    "items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"port":{"type":"integer"}}}}}}}}}}]}}`

func gadgetReview(uid string) string {
	return fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":%q,
	  "kind":{"group":"example.com","version":"v1","kind":"Gadget"},"resource":{"group":"example.com","version":"v1","resource":"gadgets"},
	  "namespace":"default","name":"g","operation":"CREATE","userInfo":{"username":"alice"},
	  "object":{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g","namespace":"default"},"spec":{"ports":[{"name":"http","port":80}]}},
	  "dryRun":false,"options":{"apiVersion":"meta.k8s.io/v1","kind":"CreateOptions"}}}`, uid)
}

// A custom resource is refused as the plugin refuses a kind without a
// schema until its CRD is in the cluster's inventory, and counted; then it
// is merged with the CRD's schema.
func TestWebhookMutatesCustomResource(t *testing.T) {
	e := newE2E(t, pgtest.URL(t))
	e.onboard()
	applyAll(t, e.m, e.tenant.ID, gadgetPolicy)
	answer := func(uid string) *admissionv1.AdmissionResponse {
		code, body := e.post(e.client, "/t/acme/mutate", e.token, "application/json", gadgetReview(uid))
		var rev admissionv1.AdmissionReview
		if code != 200 || json.Unmarshal(body, &rev) != nil || rev.Response == nil {
			t.Fatalf("%d %s", code, body)
		}
		return rev.Response
	}
	missing := func() float64 {
		return counter(t, e.m, "portcullis_inventory_crd_missing_total", "tenant", "acme", "cluster", "prod")
	}
	var resp *admissionv1.AdmissionResponse
	testutil.Eventually(t, 10*time.Second, "the gadget policy to apply", func() bool {
		resp = answer("g0")
		return resp.Result != nil && resp.Result.Code == 503
	})
	if resp.Allowed || !strings.Contains(resp.Result.Message, "Resource kind example.com/v1, Kind=Gadget not found") {
		t.Fatalf("without the CRD: %+v", resp.Result)
	}
	if missing() < 1 {
		t.Fatal("the missing CRD was not counted")
	}

	crd, err := inventory.DecodeCRD([]byte(gadgetsCRD))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.m.Inventory.ReplaceCRDs(context.Background(), e.tenant.ID, e.cluster.ID, []*inventory.CRD{crd}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the CRD to reach the webhook", func() bool {
		resp = answer("g1")
		return resp.Allowed
	})
	const want = `[{"op":"add","path":"/spec/ports/1","value":{"name":"metrics","port":9090}}]`
	if string(resp.Patch) != want || resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("patch %s (%v), want %s", resp.Patch, resp.PatchType, want)
	}
	before := missing()
	answer("g2")
	if got := missing(); got != before {
		t.Fatalf("crd_missing went from %v to %v with the CRD known", before, got)
	}
}
