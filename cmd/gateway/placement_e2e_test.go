package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/policystore"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// A deployment of a tenant's own: the main one excludes the tenant and
// answers 421 for it, through the real router, before authentication
// (no credential is even sent); every other tenant is answered as before.
func TestExcludedTenantAnswers421EndToEnd(t *testing.T) {
	e := newE2E(t, pgtest.URL(t), func(c *Config) { c.ExcludeTenants = "noisy" })
	e.onboard()
	code, body := e.post(e.client, "/t/acme/validate", e.token, "application/json",
		podReview("admission.k8s.io/v1", "served", "default", goodPod, false))
	if code != http.StatusOK {
		t.Fatalf("acme: %d %s", code, body)
	}
	for _, path := range []string{"/t/noisy/validate", "/t/noisy/mutate", "/t/noisy/k/0123456789abcdef0123456789/validate"} {
		code, body := e.post(e.client, path, "", "application/json",
			podReview("admission.k8s.io/v1", "misdirected", "default", goodPod, false))
		if code != http.StatusMisdirectedRequest || !strings.Contains(string(body), `does not answer for tenant \"noisy\"`) {
			t.Fatalf("%s: %d %s", path, code, body)
		}
	}
}

// Two deployments on one database: acme's own (--tenants acme) and the
// shared one (--exclude-tenants acme). Each answers its tenants and sends
// the other's back with 421; a policy change made through the shared
// deployment's store reaches acme's own replicas by notification.
func TestTenantOnReplicasOfItsOwnEndToEnd(t *testing.T) {
	db := pgtest.URL(t)
	own := newE2E(t, db, func(c *Config) { c.Tenants = "acme" })
	shared := newE2E(t, db, func(c *Config) { c.ExcludeTenants = "acme" })
	own.onboard()

	// Another tenant, on the shared deployment.
	ctx := context.Background()
	beta, err := shared.m.Tenancy.CreateTenant(ctx, "beta", "Beta")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := shared.m.Tenancy.CreateCluster(ctx, beta.ID, "prod", nil)
	if err != nil {
		t.Fatal(err)
	}
	issued, err := shared.m.Tenancy.CreateToken(ctx, beta.ID, cl.ID, tenancy.CredentialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	applyAll(t, shared.m, beta.ID, e2ePolicies)
	def := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"kubernetes.io/metadata.name": "default"}}}
	if err := shared.m.Inventory.ReplaceNamespaces(ctx, beta.ID, cl.ID, []*corev1.Namespace{def}); err != nil {
		t.Fatal(err)
	}
	shared.tenant, shared.token = beta, issued.Token
	testutil.Eventually(t, 5*time.Second, "the shared deployment to accept beta's token", func() bool {
		code, _ := shared.post(shared.client, "/t/beta/validate", shared.token, "application/json",
			podReview("admission.k8s.io/v1", "probe", "default", goodPod, false))
		return code == http.StatusOK
	})

	allowed := func(e *e2e, path, token, pod string) bool {
		t.Helper()
		body := podReview("admission.k8s.io/v1", "p", "default", pod, false)
		code, out := e.post(e.client, path, token, "application/json", body)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, code, out)
		}
		return verify(t, "admission.k8s.io/v1", "p", out).Allowed
	}
	if !allowed(own, "/t/acme/validate", own.token, goodPod) || allowed(own, "/t/acme/validate", own.token, noTeamPod) {
		t.Fatal("acme's own deployment does not enforce acme's policies")
	}
	if !allowed(shared, "/t/beta/validate", shared.token, goodPod) || allowed(shared, "/t/beta/validate", shared.token, noTeamPod) {
		t.Fatal("the shared deployment does not enforce beta's policies")
	}
	for _, tc := range []struct {
		e            *e2e
		path, tenant string
	}{{shared, "/t/acme/validate", "acme"}, {shared, "/t/ac%6De/validate", "acme"}, {own, "/t/beta/validate", "beta"}, {own, "/t/beta/mutate", "beta"}} {
		code, out := tc.e.post(tc.e.client, tc.path, "", "application/json", podReview("admission.k8s.io/v1", "x", "default", goodPod, false))
		if code != http.StatusMisdirectedRequest || !strings.Contains(string(out), `tenant \"`+tc.tenant+`\"`) {
			t.Fatalf("%s: %d %s", tc.path, code, out)
		}
	}

	// The exclusion is on the name the credential must match exactly: a
	// spelling that escapes it names another tenant, which acme's token
	// is not for.
	if code, out := shared.post(shared.client, "/t/ACME/validate", own.token, "application/json",
		podReview("admission.k8s.io/v1", "y", "default", goodPod, false)); code != http.StatusForbidden && code != http.StatusUnauthorized {
		t.Fatalf("acme's token under another spelling on the shared deployment: %d %s", code, out)
	}

	// acme's policy deleted through the shared deployment's store: its
	// own replicas stop enforcing it.
	ref := policystore.Ref{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding", Name: "require-team"}
	if _, err := shared.m.Policies.Delete(ctx, own.tenant.ID, "test", ref, policystore.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the deletion to reach acme's own replicas", func() bool {
		return allowed(own, "/t/acme/validate", own.token, noTeamPod)
	})
}
