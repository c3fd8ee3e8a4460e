package main

import (
	"context"
	"io"
	"net/http"
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
