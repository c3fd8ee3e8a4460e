package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
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
