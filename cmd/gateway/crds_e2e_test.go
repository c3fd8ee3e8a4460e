package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

const widgetPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: widgets-v1}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}
  validations:
  - expression: "object.apiVersion == 'example.com/v1' && object.spec.size < 10"
    messageExpression: "'too big as ' + object.apiVersion"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: widgets-v1}
spec:
  policyName: widgets-v1
  validationActions: [Deny]
`

// widgetsCRD is kubectl get crd -o yaml, shortened.
const widgetsCRD = `apiVersion: v1
kind: List
items:
- apiVersion: apiextensions.k8s.io/v1
  kind: CustomResourceDefinition
  metadata: {name: widgets.example.com}
  spec:
    group: example.com
    names: {kind: Widget, plural: widgets}
    scope: Namespaced
    versions:
    - {name: v1, served: true, storage: true}
    - {name: v2, served: true, storage: false}
  status: {storedVersions: [v1]}
`

// widgetReview is a Widget created as example.com/v1 that the apiserver
// converted to v2 for the webhook.
func widgetReview(uid string, size int) string {
	return fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":%q,
	  "kind":{"group":"example.com","version":"v2","kind":"Widget"},"resource":{"group":"example.com","version":"v2","resource":"widgets"},
	  "requestKind":{"group":"example.com","version":"v1","kind":"Widget"},"requestResource":{"group":"example.com","version":"v1","resource":"widgets"},
	  "namespace":"default","name":"w","operation":"CREATE","userInfo":{"username":"alice"},
	  "object":{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w","namespace":"default"},"spec":{"size":%d}},
	  "dryRun":false,"options":{"apiVersion":"meta.k8s.io/v1","kind":"CreateOptions"}}}`, uid, size)
}

// A converted custom resource fails its binding until the cluster's CRD is
// uploaded, and the gateway counts it; with the CRD (strategy None) the
// policy sees the object in the version it matched.
func TestWebhookConvertedCustomResource(t *testing.T) {
	e := newE2E(t, pgtest.URL(t))
	e.onboard()
	applyAll(t, e.m, e.tenant.ID, widgetPolicy)
	missing := func() float64 {
		return counter(t, e.m, "portcullis_inventory_crd_missing_total", "tenant", "acme", "cluster", "prod")
	}
	var body []byte
	testutil.Eventually(t, 10*time.Second, "the widget policy to fail on the converted widget", func() bool {
		_, body = e.post(e.client, "/t/acme/validate", e.token, "application/json", widgetReview("w0", 1))
		return strings.Contains(string(body), "failed to configure binding: failed to convert object version")
	})
	if resp := verify(t, "admission.k8s.io/v1", "w0", body); resp.Allowed {
		t.Fatalf("allowed without the CRD: %s", body)
	}
	if missing() < 1 {
		t.Fatal("the missing CRD was not counted")
	}

	// Uploaded as a newcomer would, with the CLI.
	a := operatorCLI(t, e)
	writeFile(t, "bad.yaml", strings.Replace(widgetsCRD, "scope: Namespaced", "scope: Everywhere", 1))
	a.fails(1, "items[0].spec.scope", "crds", "import", "--tenant", "acme", "--cluster", "prod", "-f", "bad.yaml")
	writeFile(t, "crds.yaml", widgetsCRD)
	if out := a.ok("crds", "import", "--tenant", "acme", "--cluster", "prod", "-f", "crds.yaml"); out != "1 CustomResourceDefinitions imported into cluster \"prod\"\n" {
		t.Fatalf("crds import: %q", out)
	}
	if out := a.ok("get", "crds", "--tenant", "acme"); !strings.Contains(out, "widgets.example.com   Widget   Namespaced   v1,v2      None") {
		t.Fatalf("get crds:\n%s", out)
	}
	if out := a.ok("get", "crd", "widgets.example.com", "--tenant", "acme", "--cluster", "prod", "-o", "json"); !strings.Contains(out, `"storedVersions"`) {
		t.Fatalf("get crd NAME -o json:\n%s", out)
	}
	a.fails(1, `CustomResourceDefinition "gadgets.example.com" is not in the inventory of cluster "prod"`, "get", "crds", "gadgets.example.com", "--tenant", "acme")
	testutil.Eventually(t, 10*time.Second, "the CRD to reach the webhook", func() bool {
		_, body = e.post(e.client, "/t/acme/validate", e.token, "application/json", widgetReview("w1", 1))
		return verify(t, "admission.k8s.io/v1", "w1", body).Allowed
	})
	before := missing()
	_, body = e.post(e.client, "/t/acme/validate", e.token, "application/json", widgetReview("w2", 12))
	if resp := verify(t, "admission.k8s.io/v1", "w2", body); resp.Allowed || !strings.Contains(resp.Result.Message, "too big as example.com/v1") {
		t.Fatalf("a big widget: %s", body)
	}
	if got := missing(); got != before {
		t.Fatalf("crd_missing went from %v to %v with the CRD known", before, got)
	}
}
