package limits

import (
	"context"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// Lane runs the evaluations of tenants whose requests have proved
// expensive on a few OS threads that the kernel schedules at the lowest
// priority (nice 19, Linux). A tenant with costly-but-legal policies then
// uses the CPU that the other tenants leave idle and gives it back to them
// at once: the concurrency limit alone bounded its share to half the
// processors, which still raised another tenant's p99 several times on a
// 2-core replica (1.3 ms to 4.5 ms, scripts/bench-noisy.sh, November
// 2026), because that tenant's requests then shared one core with
// everything else.
//
// The lane adds one Go processor (P) per worker, so the lane's threads
// never hold the processors that ordinary requests run on: with
// GOMAXPROCS unchanged, a request that needed a second P waited for the
// scheduler to preempt the lane's goroutine (up to 10 ms). It does so,
// and starts its threads, only when a tenant first needs it, so that a
// replica without expensive tenants runs as if there were no lane (a
// first version that added the P at start, and also read each thread's
// CPU clock around every evaluation, cost 11% of the throughput on one
// core; scripts/bench-load.sh).
//
// Which tenants are expensive is learnt, not configured: the limiter keeps
// a moving average of each tenant's CEL cost per request (Limiter.Run),
// and a tenant above the threshold evaluates on the lane until its
// average falls below half of it.
type Lane struct {
	work     chan *laneJob
	quit     chan struct{}
	starting sync.Once
	closing  sync.Once
	workers  int
	logger   *slog.Logger
	// demoted says whether the threads' priority could be lowered; where
	// it cannot (another OS, a seccomp profile that refuses
	// setpriority) the lane still bounds the expensive tenants' share of
	// the processors.
	demoted atomic.Bool
	started atomic.Bool
	runs    prometheus.Counter
}

type laneJob struct {
	f     func()
	panic any
	done  chan struct{}
}

// NewLane returns a lane of workers threads, started (and GOMAXPROCS
// raised by workers) at its first Run. Start it after everything that
// sizes itself by GOMAXPROCS (the tenants' default concurrency, the
// authentication queues).
func NewLane(workers int, logger *slog.Logger) *Lane {
	workers = max(1, workers)
	return &Lane{work: make(chan *laneJob), quit: make(chan struct{}), workers: workers, logger: logger,
		runs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portcullis_evaluations_low_priority_total",
			Help: "Evaluations run on the low-priority lane (tenants whose CEL cost per request averages over the threshold).",
		})}
}

func (l *Lane) start() {
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + l.workers)
	var once sync.Once
	for range l.workers {
		go l.worker(func(err error) {
			once.Do(func() {
				if l.logger == nil {
					return
				}
				l.logger.Warn("the low-priority lane's threads keep their priority; expensive tenants are still bounded to the lane's workers",
					"workers", l.workers, "error", err)
			})
		})
	}
}

// Close stops the workers once their evaluations end; their threads exit
// with them (they are locked), and GOMAXPROCS is lowered again. Run
// refuses work after Close. A process that starts several gateways (the
// tests) must close each one's lane, or threads and processors pile up.
func (l *Lane) Close() {
	l.closing.Do(func() {
		close(l.quit)
		// A lane never started raised nothing; one started later would
		// find quit closed first and raise nothing either.
		l.starting.Do(func() {})
		if l.started.Load() {
			runtime.GOMAXPROCS(max(1, runtime.GOMAXPROCS(0)-l.workers))
		}
	})
}

// Collectors returns the lane's metrics.
func (l *Lane) Collectors() []prometheus.Collector { return []prometheus.Collector{l.runs} }

// Demoted says whether the lane's threads run at the lowest priority.
func (l *Lane) Demoted() bool { return l.demoted.Load() }

func (l *Lane) worker(warn func(error)) {
	// The thread is never unlocked: its priority cannot be raised again
	// without CAP_SYS_NICE, so it must never run another goroutine.
	runtime.LockOSThread()
	if err := lowerThreadPriority(); err != nil {
		warn(err)
	} else {
		l.demoted.Store(true)
	}
	for {
		select {
		case j := <-l.work:
			l.run(j)
		case <-l.quit:
			return
		}
	}
}

func (l *Lane) run(j *laneJob) {
	defer close(j.done)
	defer func() {
		// The caller's goroutine panics instead: the HTTP server recovers
		// there, not on the lane's.
		if p := recover(); p != nil {
			j.panic = p
		}
	}()
	j.f()
}

// Run runs f on a lane thread. It waits for a free worker no longer than
// ctx allows; a panic in f is raised again in the caller.
func (l *Lane) Run(ctx context.Context, f func()) error {
	l.starting.Do(func() {
		select {
		case <-l.quit:
			return
		default:
		}
		l.started.Store(true)
		l.start()
	})
	j := &laneJob{f: f, done: make(chan struct{})}
	select {
	case l.work <- j:
	case <-ctx.Done():
		return fault.Errorf(fault.TooManyRequests,
			"tenant's expensive evaluations are waiting for the low-priority lane (%d workers on this replica)", l.workers)
	case <-l.quit:
		return fault.Errorf(fault.Unavailable, "the replica is shutting down")
	}
	l.runs.Inc()
	<-j.done
	if j.panic != nil {
		panic(j.panic)
	}
	return nil
}
