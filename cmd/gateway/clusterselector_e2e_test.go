package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

const prodOnlyPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: no-latest}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
  validations:
  - expression: "object.spec.containers.all(c, !c.image.endsWith(':latest'))"
    message: "no :latest on production clusters"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: no-latest-prod
  annotations: {portcullis.dev/cluster-selector: env=prod}
spec:
  policyName: no-latest
  validationActions: [Deny]
`

// addLabelMAP mutates every Pod, so that admin test runs the chain.
const addLabelMAP = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: add-label}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"checked": "yes"}}}'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: add-label}
spec:
  policyName: add-label
`

// TestClusterSelectorThroughTheWebhook binds a policy to the tenant's
// clusters labelled env=prod: it denies on the prod cluster, does not apply
// on the dev cluster, and applies there as soon as the CLI relabels it.
func TestClusterSelectorThroughTheWebhook(t *testing.T) {
	e := newE2E(t, pgtest.URL(t))
	e.onboard() // tenant acme, cluster prod (no labels yet), its token
	a := operatorCLI(t, e)
	ctx := context.Background()
	dev, err := e.m.Tenancy.CreateCluster(ctx, e.tenant.ID, "dev", map[string]string{"env": "dev"})
	if err != nil {
		t.Fatal(err)
	}
	issued, err := e.m.Tenancy.CreateToken(ctx, e.tenant.ID, dev.ID, tenancy.CredentialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	def := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"kubernetes.io/metadata.name": "default"}}}
	if err := e.m.Inventory.ReplaceNamespaces(ctx, e.tenant.ID, dev.ID, []*corev1.Namespace{def}); err != nil {
		t.Fatal(err)
	}
	e.waitAccepted(e.client, issued.Token)
	if out := a.ok("cluster", "label", "prod", "--tenant", "acme", "env=prod", "tier=gold"); !strings.Contains(out, `cluster "prod" labelled: env=prod,tier=gold`) {
		t.Fatalf("cluster label:\n%s", out)
	}
	writeFile(t, "prod-only.yaml", prodOnlyPolicy)
	a.ok("apply", "--tenant", "acme", "-f", "prod-only.yaml")

	allowed := func(token, uid string) bool {
		t.Helper()
		code, body := e.post(e.client, "/t/acme/validate", token, "application/json", podReview("admission.k8s.io/v1", uid, "default", goodPod, false))
		if code != 200 {
			t.Fatalf("status %d: %s", code, body)
		}
		return verify(t, "admission.k8s.io/v1", uid, body).Allowed
	}
	testutil.Eventually(t, 5*time.Second, "the prod cluster to be denied", func() bool { return !allowed(e.token, "prod-1") })
	if !allowed(issued.Token, "dev-1") {
		t.Fatal("the binding applied on the dev cluster")
	}
	testutil.Eventually(t, 5*time.Second, "the dev decision to be recorded", func() bool { return len(e.rec.byUID("dev-1")) == 1 })
	d := e.rec.byUID("dev-1")[0]
	skipped := slices.IndexFunc(d.Bindings, func(b decisions.BindingRecord) bool { return b.Binding == "no-latest-prod" })
	if skipped < 0 || d.Bindings[skipped].Outcome != decisions.OutcomeClusterSkipped {
		t.Fatalf("dev decision bindings %+v: want the binding recorded as ClusterSkipped", d.Bindings)
	}

	// admin test explains the skip, and on prod denies as the webhook
	// does, in the admission chain too (mutating, then validating on the
	// mutated object), with a mutating policy that matches.
	writeFile(t, "add-label.yaml", addLabelMAP)
	a.ok("apply", "--tenant", "acme", "-f", "add-label.yaml")
	writeFile(t, "review.json", podReview("admission.k8s.io/v1", "t-1", "default", goodPod, false))
	if out := a.ok("test", "--tenant", "acme", "--cluster", "prod", "-f", "review.json"); !strings.Contains(out, "mutating webhook: allowed") ||
		!strings.Contains(out, "validating webhook, on the mutated object: denied") || !strings.Contains(out, "no :latest on production clusters") {
		t.Fatalf("admin test on prod, in the chain, does not deny:\n%s", out)
	}
	if out := a.ok("test", "--tenant", "acme", "--cluster", "dev", "-f", "review.json", "--explain"); !strings.Contains(out, "ClusterSkipped") ||
		!strings.Contains(out, `portcullis.dev/cluster-selector "env=prod"`) {
		t.Fatalf("admin test on dev does not explain the skip:\n%s", out)
	}

	// Relabelling the dev cluster applies the binding there within a second.
	a.fails(2, "already has label env=dev", "cluster", "label", "dev", "--tenant", "acme", "env=prod")
	a.ok("cluster", "label", "dev", "--tenant", "acme", "env=prod", "--overwrite")
	start := time.Now()
	testutil.Eventually(t, 2*time.Second, "the dev cluster to be denied after relabelling", func() bool { return !allowed(issued.Token, "dev-2") })
	t.Logf("the relabel took effect after %v", time.Since(start))
	out := a.ok("cluster", "label", "dev", "--tenant", "acme", "env-", "-o", "json")
	var got struct{ Labels map[string]string }
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Labels) != 0 {
		t.Fatalf("after removing env: %v %s", err, out)
	}

	// A malformed selector is refused at apply, naming the annotation.
	writeFile(t, "bad-selector.yaml", strings.Replace(prodOnlyPolicy, "env=prod", `"env in (prod"`, 1))
	stderr := a.fails(1, "(Invalid, HTTP 422)", "apply", "--tenant", "acme", "-f", "bad-selector.yaml")
	if !strings.Contains(stderr, "metadata.annotations[portcullis.dev/cluster-selector]") {
		t.Fatalf("the refusal does not name the annotation:\n%s", stderr)
	}
}
