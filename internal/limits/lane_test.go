package limits

import (
	"context"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// newTestLane returns a lane that the test has started (its first Run), and
// checks that it raised GOMAXPROCS only then and lowers it at Close.
func newTestLane(t *testing.T, workers int) *Lane {
	t.Helper()
	procs := runtime.GOMAXPROCS(0)
	l := NewLane(workers, nil)
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Fatalf("GOMAXPROCS %d before the lane's first use, want %d", got, procs)
	}
	if err := l.Run(context.Background(), func() {}); err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != procs+workers {
		t.Fatalf("GOMAXPROCS %d after a lane of %d started, want %d", got, workers, procs+workers)
	}
	t.Cleanup(func() {
		l.Close()
		if got := runtime.GOMAXPROCS(0); got != procs {
			t.Errorf("GOMAXPROCS %d after Close, want %d", got, procs)
		}
	})
	return l
}

func TestLaneRunsOnALowPriorityThread(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("thread priorities are only lowered on Linux")
	}
	l := newTestLane(t, 1)
	var nice int
	var err error
	rerr := l.Run(context.Background(), func() {
		// getpriority(2) returns 20-nice from the raw system call.
		var p int
		p, err = unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
		nice = 20 - p
	})
	if rerr != nil || err != nil {
		t.Fatalf("Run: %v, getpriority: %v", rerr, err)
	}
	if nice != 19 {
		t.Errorf("the lane's thread has nice %d, want 19", nice)
	}
	if !l.Demoted() {
		t.Error("Demoted() = false after the thread's priority was lowered")
	}
	// The caller's thread keeps its priority.
	if p, _ := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid()); 20-p == 19 {
		t.Error("the caller's thread was demoted too")
	}
}

func TestLaneRaisesPanicsInTheCaller(t *testing.T) {
	l := newTestLane(t, 1)
	defer func() {
		if p := recover(); p != "boom" {
			t.Fatalf("recovered %v, want the evaluation's panic", p)
		}
		// The worker survived its panic.
		ran := false
		if err := l.Run(context.Background(), func() { ran = true }); err != nil || !ran {
			t.Fatalf("the lane after a panic: ran %v, %v", ran, err)
		}
	}()
	_ = l.Run(context.Background(), func() { panic("boom") })
	t.Fatal("Run returned after a panic")
}

func TestLaneRefusesWhenNoWorkerBeforeTheDeadline(t *testing.T) {
	l := newTestLane(t, 1)
	busy, free := make(chan struct{}), make(chan struct{})
	go func() { _ = l.Run(context.Background(), func() { close(busy); <-free }) }()
	<-busy
	defer close(free)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	ran := false
	err := l.Run(ctx, func() { ran = true })
	if fault.ErrorCode(err) != fault.TooManyRequests || ran {
		t.Fatalf("Run with the only worker busy: ran %v, %v; want TooManyRequests and not run", ran, err)
	}
}

func TestLaneNeverStartedRaisesNothing(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	l := NewLane(3, nil)
	l.Close()
	l.Close() // twice is harmless: a gateway's Close may run after a failed start
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Fatalf("GOMAXPROCS %d after a lane that never ran, want %d", got, procs)
	}
	ran := false
	err := l.Run(context.Background(), func() { ran = true })
	if fault.ErrorCode(err) != fault.Unavailable || ran {
		t.Fatalf("Run after Close: ran %v, %v; want Unavailable and not run", ran, err)
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Fatalf("GOMAXPROCS %d after Run on a closed lane, want %d", got, procs)
	}
}

func TestLimiterMovesExpensiveTenantsToTheLaneAndBack(t *testing.T) {
	lim := NewLimiter(Limits{}, nil, nil)
	lane := NewLane(1, nil)
	t.Cleanup(lane.Close)
	lim.UseLane(lane, 100_000)
	const expensive, ordinary = 1, 2
	run := func(tenant, cost int64) {
		t.Helper()
		if err := lim.Run(context.Background(), tenant, func() int64 { return cost }); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		run(ordinary, 5_000)
	}
	if lim.OnLane(ordinary) {
		t.Fatal("a tenant of 5,000-cost requests is on the lane")
	}
	run(expensive, 8_000_000)
	if !lim.OnLane(expensive) {
		t.Fatal("one near-cost-limit request (8e6) did not move the tenant to the lane")
	}
	if lim.OnLane(ordinary) {
		t.Fatal("another tenant moved to the lane with it")
	}
	run(ordinary, 300_000) // one costly request of an ordinary tenant
	if lim.OnLane(ordinary) {
		t.Fatal("a single 300,000-cost request moved an ordinary tenant")
	}
	for range 5 {
		run(expensive, 8_000_000)
	}
	if !lim.OnLane(expensive) {
		t.Fatal("the tenant left the lane while its requests still cost 8e6")
	}
	// Cheap again: it leaves after a few requests.
	for i := 0; lim.OnLane(expensive); i++ {
		if i == 40 {
			t.Fatal("the tenant is still on the lane after 40 requests of 5,000")
		}
		run(expensive, 5_000)
	}
}

func TestLimiterRunWithoutLane(t *testing.T) {
	lim := NewLimiter(Limits{}, nil, nil)
	ran := false
	if err := lim.Run(context.Background(), 1, func() int64 { ran = true; return 1e9 }); err != nil || !ran {
		t.Fatalf("ran %v, %v", ran, err)
	}
	if lim.OnLane(1) {
		t.Error("a limiter without a lane put a tenant on it")
	}
}
