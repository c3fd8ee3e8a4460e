package limits

import (
	"context"
	"log/slog"
	"math"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgnotify"
)

// Names of the limits, the limit label of the counter of refusals.
const (
	LimitConcurrency = "concurrent_evaluations"
	LimitCost        = "cel_cost_per_request"
	LimitRate        = "requests_per_second"
	// LimitLane: an expensive tenant's evaluation found no lane worker
	// before its deadline.
	LimitLane = "low_priority_lane"
)

// DefaultConcurrentEvaluations is the default of ConcurrentEvaluations:
// half the replica's processors, at least one. A tenant then never holds
// more than half the CPU with its evaluations, whatever its policies cost:
// on a 2-core replica, six concurrent near-cost-limit requests of one
// tenant raised another tenant's median latency from 14 ms to 254 ms
// before this limit (November 2026).
func DefaultConcurrentEvaluations() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// DefaultCELCostPerRequest is the default of CELCostPerRequest: ten
// evaluations at the apiserver's full per-evaluation budget (1e7). One
// policy can use at most 2.25e7 (validations and messages, audit
// annotations, matchConditions), so no policy that is legal on its own is
// refused by the default; a tenant whose requests need more gets an
// override.
const DefaultCELCostPerRequest = 100_000_000

// Limiter enforces the limits on one replica. Each replica enforces them
// on its own share of the traffic.
type Limiter struct {
	defaults Limits
	store    *Store
	logger   *slog.Logger
	// maxWait bounds how long a request waits for an evaluation slot
	// before it is refused (the request's own deadline may end it sooner).
	maxWait time.Duration
	now     func() time.Time

	// lane, when set, runs the evaluations of tenants whose average CEL
	// cost per request is over laneAfter (see Lane).
	lane      *Lane
	laneAfter int64

	mu        sync.Mutex
	overrides map[int64]Limits
	tenants   map[int64]*tenantState
}

type tenantState struct {
	// slots holds a token per evaluation in progress; its capacity is the
	// concurrency it was made for (conc). A change makes a new channel:
	// evaluations in progress release into the one they took.
	slots chan struct{}
	conc  int
	// The token bucket of the rate limit, made for rate.
	tokens, rate float64
	last         time.Time
	// avgCost is the moving average of the tenant's CEL cost per
	// request; onLane says whether its evaluations run on the
	// low-priority lane.
	avgCost int64
	onLane  bool
}

// NewLimiter returns a limiter with the given defaults (zero fields: no
// limit) and the overrides of store (nil: none).
func NewLimiter(defaults Limits, store *Store, logger *slog.Logger) *Limiter {
	return &Limiter{defaults: defaults, store: store, logger: logger, maxWait: time.Second, now: time.Now,
		overrides: map[int64]Limits{}, tenants: map[int64]*tenantState{}}
}

// Load reads every tenant's overrides.
func (l *Limiter) Load(ctx context.Context) error {
	if l.store == nil {
		return nil
	}
	all, err := l.store.AllOverrides(ctx)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.overrides = all
	l.mu.Unlock()
	return nil
}

// Subscribe reloads a tenant's overrides when they change, and all of them
// when the listener reconnects (notifications may have been lost).
func (l *Limiter) Subscribe(ln *pgnotify.Listener) {
	ln.Subscribe(Channel, func(payload string) {
		id, err := strconv.ParseInt(payload, 10, 64)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		o, err := l.store.Get(ctx, id)
		if err != nil {
			l.logger.Warn("reloading a tenant's limits failed; the old ones stay", "tenant_id", id, "error", err)
			return
		}
		l.mu.Lock()
		l.overrides[id] = o
		l.mu.Unlock()
	})
	ln.OnConnect(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := l.Load(ctx); err != nil {
			l.logger.Warn("reloading the tenants' limits failed; the old ones stay", "error", err)
		}
	})
}

// Defaults returns the gateway's defaults.
func (l *Limiter) Defaults() Limits { return l.defaults }

// For returns the tenant's effective limits.
func (l *Limiter) For(tenantID int64) Limits {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.defaults.Over(l.overrides[tenantID])
}

// Admit counts one request of the tenant against its rate. A refusal is a
// TooManyRequests error, with how long until a request would pass.
func (l *Limiter) Admit(tenantID int64) (time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rate := l.defaults.Over(l.overrides[tenantID]).RequestsPerSecond
	if rate <= 0 {
		return 0, nil
	}
	t := l.state(tenantID)
	now := l.now()
	burst := math.Max(1, rate)
	if t.last.IsZero() || t.rate != rate {
		// A new or changed limit starts with a full burst: a raised
		// limit takes effect at once.
		t.tokens, t.rate = burst, rate
	} else {
		t.tokens = math.Min(burst, t.tokens+now.Sub(t.last).Seconds()*rate)
	}
	t.last = now
	if t.tokens >= 1 {
		t.tokens--
		return 0, nil
	}
	wait := time.Duration((1 - t.tokens) / rate * float64(time.Second))
	return wait, fault.Errorf(fault.TooManyRequests,
		"tenant over its limit of %g requests per second on this replica; the webhook's failurePolicy applies", rate)
}

// Acquire waits for one of the tenant's evaluation slots, at most a second
// and never past ctx. The caller must call release when its evaluation
// ends; release may be called more than once (deferred, in case the
// evaluation panics, and as soon as it ends). A refusal is a
// TooManyRequests error.
func (l *Limiter) Acquire(ctx context.Context, tenantID int64) (release func(), _ error) {
	l.mu.Lock()
	conc := l.defaults.Over(l.overrides[tenantID]).ConcurrentEvaluations
	if conc <= 0 {
		l.mu.Unlock()
		return func() {}, nil
	}
	t := l.state(tenantID)
	if t.conc != conc {
		t.slots, t.conc = make(chan struct{}, conc), conc
	}
	slots := t.slots
	l.mu.Unlock()
	var released atomic.Bool
	release = func() {
		if released.CompareAndSwap(false, true) {
			<-slots
		}
	}
	select {
	case slots <- struct{}{}:
		return release, nil
	default:
	}
	timer := time.NewTimer(l.maxWait)
	defer timer.Stop()
	select {
	case slots <- struct{}{}:
		return release, nil
	case <-timer.C:
	case <-ctx.Done():
	}
	return nil, fault.Errorf(fault.TooManyRequests,
		"tenant over its limit of %d concurrent evaluations on this replica; the webhook's failurePolicy applies", conc)
}

func (l *Limiter) state(tenantID int64) *tenantState {
	t := l.tenants[tenantID]
	if t == nil {
		t = &tenantState{}
		l.tenants[tenantID] = t
	}
	return t
}
