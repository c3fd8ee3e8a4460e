package limits

import (
	"context"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

func newTestLane(t *testing.T, workers int) *Lane {
	t.Helper()
	procs := runtime.GOMAXPROCS(0)
	l := NewLane(workers, nil)
	if got := runtime.GOMAXPROCS(0); got != procs+workers {
		t.Fatalf("GOMAXPROCS %d after a lane of %d, want %d", got, workers, procs+workers)
	}
	t.Cleanup(func() {
		l.Close()
		if got := runtime.GOMAXPROCS(0); got != procs {
			t.Errorf("GOMAXPROCS %d after Close, want %d", got, procs)
		}
	})
	return l
}

// spin uses d of the CPU: measured as the thread's CPU time where that can
// be read, so that a lane thread that waits for a core (it has the lowest
// priority; the tests may share the machine) still spends d.
func spin(d time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for start := threadCPUTime(); threadCPUTime()-start < d; {
	}
}

func TestLaneRunsOnALowPriorityThread(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("thread priorities are only lowered on Linux")
	}
	l := newTestLane(t, 1)
	var nice int
	var err error
	spent, rerr := l.Run(context.Background(), func() {
		// getpriority(2) returns 20-nice from the raw system call.
		var p int
		p, err = unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
		nice = 20 - p
		spin(20 * time.Millisecond)
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
	if spent < 20*time.Millisecond || spent > time.Second {
		t.Errorf("CPU time of a 20ms spin measured as %v", spent)
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
		if _, err := l.Run(context.Background(), func() { ran = true }); err != nil || !ran {
			t.Fatalf("the lane after a panic: ran %v, %v", ran, err)
		}
	}()
	_, _ = l.Run(context.Background(), func() { panic("boom") })
	t.Fatal("Run returned after a panic")
}

func TestLaneRefusesWhenNoWorkerBeforeTheDeadline(t *testing.T) {
	l := newTestLane(t, 1)
	busy, free := make(chan struct{}), make(chan struct{})
	go func() { _, _ = l.Run(context.Background(), func() { close(busy); <-free }) }()
	<-busy
	defer close(free)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	ran := false
	_, err := l.Run(ctx, func() { ran = true })
	if fault.ErrorCode(err) != fault.TooManyRequests || ran {
		t.Fatalf("Run with the only worker busy: ran %v, %v; want TooManyRequests and not run", ran, err)
	}
}

func TestLimiterMovesExpensiveTenantsToTheLaneAndBack(t *testing.T) {
	lim := NewLimiter(Limits{}, nil, nil)
	lim.UseLane(newTestLane(t, 1), 5*time.Millisecond)
	const expensive, ordinary = 1, 2
	run := func(tenant int64, d time.Duration) {
		t.Helper()
		if err := lim.Run(context.Background(), tenant, func() { spin(d) }); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		run(ordinary, 100*time.Microsecond)
	}
	if lim.OnLane(ordinary) {
		t.Fatal("a tenant of 0.1 ms evaluations is on the lane")
	}
	run(expensive, 40*time.Millisecond)
	if !lim.OnLane(expensive) {
		t.Fatal("one 40 ms evaluation (8x the threshold) did not move the tenant to the lane")
	}
	if lim.OnLane(ordinary) {
		t.Fatal("another tenant moved to the lane with it")
	}
	// While it stays expensive it stays (measured by CPU time there).
	for range 5 {
		run(expensive, 20*time.Millisecond)
	}
	if !lim.OnLane(expensive) {
		t.Fatal("the tenant left the lane while its evaluations still took 20 ms")
	}
	// Cheap again: it leaves after a few evaluations.
	for i := 0; lim.OnLane(expensive); i++ {
		if i == 30 {
			t.Fatal("the tenant is still on the lane after 30 evaluations of 0.1 ms")
		}
		run(expensive, 100*time.Microsecond)
	}
}

func TestLimiterRunWithoutLane(t *testing.T) {
	lim := NewLimiter(Limits{}, nil, nil)
	ran := false
	if err := lim.Run(context.Background(), 1, func() { ran = true; spin(10 * time.Millisecond) }); err != nil || !ran {
		t.Fatalf("ran %v, %v", ran, err)
	}
	if lim.OnLane(1) {
		t.Error("a limiter without a lane put a tenant on it")
	}
}

func TestLaneRefusesAfterClose(t *testing.T) {
	l := NewLane(1, nil)
	l.Close()
	l.Close() // twice is harmless: a gateway's Close may run after a failed start
	ran := false
	_, err := l.Run(context.Background(), func() { ran = true })
	if fault.ErrorCode(err) != fault.Unavailable || ran {
		t.Fatalf("Run after Close: ran %v, %v; want Unavailable and not run", ran, err)
	}
}
