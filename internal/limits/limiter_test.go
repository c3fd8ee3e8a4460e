package limits

import (
	"context"
	"io"
	"log/slog"
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

	if got := l.For(2); got != (Limits{ConcurrentEvaluations: 1, CELCostPerRequest: 5, RequestsPerSecond: 2}) {
		t.Fatalf("overrides over defaults = %+v", got)
	}
	// A burst of one second's worth, then one request each half second.
	for i := range 2 {
		if _, err := l.Admit(1); err != nil {
			t.Fatalf("request %d of the burst: %v", i, err)
		}
	}
	wait, err := l.Admit(1)
	if fault.ErrorCode(err) != fault.TooManyRequests || wait != 500*time.Millisecond {
		t.Fatalf("over the rate: wait %v, %v", wait, err)
	}
	if _, err := l.Admit(2); err != nil {
		t.Fatalf("another tenant's rate is its own: %v", err)
	}
	now = now.Add(500 * time.Millisecond)
	if _, err := l.Admit(1); err != nil {
		t.Fatalf("after half a second: %v", err)
	}
	// A raised rate takes effect at once, with its full burst.
	l.overrides[1] = Limits{RequestsPerSecond: 100}
	for i := range 100 {
		if _, err := l.Admit(1); err != nil {
			t.Fatalf("request %d after raising the rate: %v", i, err)
		}
	}

	// Tenant 2 has one slot; the second waiter is refused.
	ctx := context.Background()
	release, err := l.Acquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, 2); fault.ErrorCode(err) != fault.TooManyRequests {
		t.Fatalf("second evaluation: %v", err)
	}
	// Raising the limit takes effect at once; the evaluation in progress
	// releases into its own slots.
	l.overrides[2] = Limits{ConcurrentEvaluations: 2}
	r2, err := l.Acquire(ctx, 2)
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
		if _, err := l2.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
}
