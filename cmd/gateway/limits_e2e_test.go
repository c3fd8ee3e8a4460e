package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/limits"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// The limits are wired end to end: the default from its flag, a refusal
// as 429 with Retry-After and a metric, and an operator's override reaching
// the webhook by notification.
func TestTenantLimitsEndToEnd(t *testing.T) {
	e := newE2E(t, pgtest.URL(t), func(c *Config) { c.TenantRequestsPerSecond = 1 })
	e.onboard()
	send := func() int {
		code, _ := e.post(e.client, "/t/acme/validate", e.token, "application/json",
			podReview("admission.k8s.io/v1", "limits", "default", goodPod, false))
		return code
	}
	// onboard's last request took the one token of the burst.
	if code := send(); code != http.StatusTooManyRequests {
		t.Fatalf("over 1 request per second: %d", code)
	}
	resp, err := http.Get(e.m.MetricsURL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `portcullis_webhook_tenant_limited_total{limit="requests_per_second",tenant="acme"}`) {
		t.Fatal("no limited metric for acme")
	}
	if err := e.m.LimitStore.Set(context.Background(), e.tenant.ID, limits.Limits{RequestsPerSecond: 1000}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the override to reach the webhook", func() bool {
		return e.m.Limits.For(e.tenant.ID).RequestsPerSecond == 1000
	})
	for i := range 20 {
		if code := send(); code != http.StatusOK {
			t.Fatalf("request %d under the override: %d", i, code)
		}
	}
}

// The inventory bounds are wired end to end (issue 30, finding 3): the
// gateway's default from its flag is the one enforced and shown, and an
// operator's override set with the CLI holds on the next upload, which
// the CLI reports naming the file.
func TestInventoryBoundsEndToEnd(t *testing.T) {
	e := newE2E(t, pgtest.URL(t), func(c *Config) { c.MaxNamespacesPerCluster = 3; c.MaxCRDsPerCluster = 7 })
	e.onboard()
	a := operatorCLI(t, e)
	row := func(out, limit string) string {
		for line := range strings.Lines(out) {
			if f := strings.Fields(line); len(f) == 4 && f[0] == limit {
				return strings.Join(f[1:], " ")
			}
		}
		t.Fatalf("no %s row in:\n%s", limit, out)
		return ""
	}
	out := a.ok("tenant", "limits", "acme")
	if got := row(out, "max-namespaces-per-cluster"); got != "3 - 3" {
		t.Fatalf("namespaces before any override: %q", got)
	}
	if got := row(out, "max-crds-per-cluster"); got != "7 - 7" {
		t.Fatalf("CRDs before any override: %q", got)
	}
	var nss strings.Builder
	for _, n := range []string{"a", "b", "c", "d"} {
		nss.WriteString("---\napiVersion: v1\nkind: Namespace\nmetadata: {name: " + n + "}\n")
	}
	if err := os.WriteFile("nss.yaml", []byte(nss.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	importNss := []string{"namespaces", "import", "--tenant", "acme", "--cluster", "prod", "-f", "nss.yaml"}
	a.fails(1, "nss.yaml: NamespaceList", importNss...)
	a.fails(1, "over its bound of 3", importNss...)

	out = a.ok("tenant", "set-limits", "acme", "--max-namespaces-per-cluster", "4")
	if got := row(out, "max-namespaces-per-cluster"); got != "4 4 3" {
		t.Fatalf("namespaces after the override: %q", got)
	}
	if got := row(out, "max-crds-per-cluster"); got != "7 - 7" {
		t.Fatalf("set-limits changed another bound: %q", got)
	}
	a.ok(importNss...)
	a.fails(1, "--max-namespaces-per-cluster: must be between 1 and 1000000", "tenant", "set-limits", "acme", "--max-namespaces-per-cluster", "-1")
	a.fails(1, "--max-crds-per-cluster: must be between 1 and 100000", "tenant", "set-limits", "acme", "--max-crds-per-cluster", "100001")
}
