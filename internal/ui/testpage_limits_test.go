package ui

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/limits"
)

// The Test page evaluates through the admin API, so it is held to the
// tenant's limits as the webhook is (issue 30, finding 6): with the
// tenant's one evaluation slot taken, the page says the tenant is over
// its limit instead of evaluating.
func TestTestPageUnderTheTenantsLimits(t *testing.T) {
	e := newEnv(t)
	b := e.signIn(e.adminA)
	if code, page := b.post("/ui/t/a/clusters", url.Values{"name": {"prod"}, "auth": {"token"}}); code != 200 {
		t.Fatalf("create cluster: %d\n%s", code, page)
	}
	lim := limits.NewLimiter(limits.Limits{ConcurrentEvaluations: 1}, nil, nil)
	e.api.Limiter = lim
	release, _, err := lim.Acquire(context.Background(), e.tenantA, 99)
	if err != nil {
		t.Fatal(err)
	}
	code, page := b.post("/ui/t/a/test", url.Values{"cluster": {"prod"}, "review": {badPodReview}})
	// 200: the page shows the refusal where the result would be.
	if code != 200 || !strings.Contains(page, "over its limit of 1 concurrent evaluations") || strings.Contains(page, "verdict") {
		t.Fatalf("with the tenant's slot taken: %d\n%s", code, page)
	}
	release()
	code, page = b.post("/ui/t/a/test", url.Values{"cluster": {"prod"}, "review": {badPodReview}})
	mustStatus(t, "test after the slot was released", code, 200, page)
	if !strings.Contains(page, `<span class="verdict allowed">allowed</span>`) {
		t.Fatalf("test result:\n%s", page)
	}
}
