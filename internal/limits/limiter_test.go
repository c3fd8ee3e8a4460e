package limits

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

func TestLimiter(t *testing.T) {
	l := NewLimiter(Limits{ConcurrentEvaluations: 2, RequestsPerSecond: 2}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	l.maxWait = 10 * time.Millisecond
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	l.overrides[2] = Limits{ConcurrentEvaluations: 1, CELCostPerRequest: 5}
	// Each tenant here has one cluster, which may use all of its limits.
	l.CountClusters(func(int64) int { return 1 })

	if got := l.For(2); got != (Limits{ConcurrentEvaluations: 1, CELCostPerRequest: 5, RequestsPerSecond: 2}) {
		t.Fatalf("overrides over defaults = %+v", got)
	}
	// A tenant without a cost limit gets one no request reaches.
	if got, none := l.CostLimit(2), l.CostLimit(1); got != 5 || none != math.MaxInt64 {
		t.Fatalf("CostLimit = %d and %d, want 5 and MaxInt64", got, none)
	}
	// A burst of one second's worth, then one request each half second.
	for i := range 2 {
		if _, _, err := l.Admit(1, 1); err != nil {
			t.Fatalf("request %d of the burst: %v", i, err)
		}
	}
	wait, _, err := l.Admit(1, 1)
	if fault.ErrorCode(err) != fault.TooManyRequests || wait != 500*time.Millisecond {
		t.Fatalf("over the rate: wait %v, %v", wait, err)
	}
	if _, _, err := l.Admit(2, 1); err != nil {
		t.Fatalf("another tenant's rate is its own: %v", err)
	}
	now = now.Add(500 * time.Millisecond)
	if _, _, err := l.Admit(1, 1); err != nil {
		t.Fatalf("after half a second: %v", err)
	}
	// A raised rate takes effect at once, with its full burst.
	l.overrides[1] = Limits{RequestsPerSecond: 100}
	for i := range 100 {
		if _, _, err := l.Admit(1, 1); err != nil {
			t.Fatalf("request %d after raising the rate: %v", i, err)
		}
	}

	// Tenant 2 has one slot; the second waiter is refused.
	ctx := context.Background()
	release, _, err := l.Acquire(ctx, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Acquire(ctx, 2, 1); fault.ErrorCode(err) != fault.TooManyRequests {
		t.Fatalf("second evaluation: %v", err)
	}
	// Raising the limit takes effect at once; the evaluation in progress
	// releases into its own slots.
	l.overrides[2] = Limits{ConcurrentEvaluations: 2}
	r2, _, err := l.Acquire(ctx, 2, 1)
	if err != nil {
		t.Fatalf("after raising the limit: %v", err)
	}
	release()
	release() // a second release gives back nothing more
	r2()
	if len(l.tenants[2].slots) != 0 {
		t.Fatalf("%d slots still held", len(l.tenants[2].slots))
	}
	// No limit: no wait.
	l2 := NewLimiter(Limits{}, nil, nil)
	for range 100 {
		if _, _, err := l2.Acquire(ctx, 1, 1); err != nil {
			t.Fatal(err)
		}
	}
}

// One cluster of a tenant with several may use only its share of the
// tenant's rate and concurrency, so that its flood (a leaked URL secret)
// leaves its siblings the rest (issue 30, finding 2). A tenant's only
// cluster may use all of it; the admin API's evaluations are always held
// to a share.
func TestClusterShare(t *testing.T) {
	l := NewLimiter(Limits{ConcurrentEvaluations: 4, RequestsPerSecond: 4}, nil, nil)
	l.maxWait = 10 * time.Millisecond
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	clusters := map[int64]int{1: 3, 2: 1}
	l.CountClusters(func(id int64) int { return clusters[id] })
	admit := func(tenant, source int64, want string) {
		t.Helper()
		_, which, err := l.Admit(tenant, source)
		if which != want || (want == "") != (err == nil) {
			t.Fatalf("Admit(%d, %d) = %q, %v; want %q", tenant, source, which, err, want)
		}
	}

	// Rate: cluster 10 floods and gets its half, 2 of 4 a second.
	admit(1, 10, "")
	admit(1, 10, "")
	wait, which, err := l.Admit(1, 10)
	if which != LimitClusterRate || fault.ErrorCode(err) != fault.TooManyRequests || wait != 500*time.Millisecond ||
		!strings.Contains(err.Error(), "2 of 4 requests per second") {
		t.Fatalf("the flood past its share: %v %q %v", wait, which, err)
	}
	// Its siblings keep the other half; then the tenant's limit holds.
	admit(1, 11, "")
	admit(1, 12, "")
	admit(1, 11, LimitRate)
	// A tenant's only cluster uses all of the rate.
	for range 4 {
		admit(2, 20, "")
	}
	admit(2, 20, LimitRate)
	// The admin API's evaluations take a share, even of a one-cluster
	// tenant's limits, and leave the cluster the rest.
	clusters[3] = 1
	admit(3, AdminAPI, "")
	admit(3, AdminAPI, "")
	admit(3, AdminAPI, LimitClusterRate)
	admit(3, 30, "")
	admit(3, 30, "")
	admit(3, 30, LimitRate)
	// A tenant with a rate below two a second still leaves a sibling a
	// request: its burst holds two.
	l.overrides[4] = Limits{RequestsPerSecond: 1}
	admit(4, 40, "")
	admit(4, 40, LimitClusterRate)
	admit(4, 41, "")

	// Concurrency: the flood holds its half of the slots; its siblings
	// take the other half at once.
	ctx := context.Background()
	var held []func()
	acquire := func(tenant, source int64, want string) {
		t.Helper()
		release, which, err := l.Acquire(ctx, tenant, source)
		if which != want || (want == "") != (err == nil) {
			t.Fatalf("Acquire(%d, %d) = %q, %v; want %q", tenant, source, which, err, want)
		}
		if err == nil {
			held = append(held, release)
		}
	}
	acquire(1, 10, "")
	acquire(1, 10, "")
	acquire(1, 10, LimitClusterConcurrency)
	acquire(1, 11, "")
	acquire(1, 12, "")
	acquire(1, 11, LimitConcurrency)
	// A tenant's only cluster may hold every slot.
	for range 4 {
		acquire(2, 20, "")
	}
	acquire(2, 20, LimitConcurrency)
	for _, release := range held {
		release()
	}
	for _, id := range []int64{1, 2} {
		ts := l.tenants[id]
		if len(ts.slots) != 0 {
			t.Fatalf("tenant %d: %d slots still held", id, len(ts.slots))
		}
		for src, g := range ts.sources {
			if len(g.slots) != 0 {
				t.Fatalf("tenant %d, source %d: %d slots still held", id, src, len(g.slots))
			}
		}
	}
}
