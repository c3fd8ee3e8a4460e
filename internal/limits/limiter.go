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
	// LimitClusterRate and LimitClusterConcurrency: one cluster (or the
	// admin API) used up its share of its tenant's rate or concurrency
	// (see ClusterShare).
	LimitClusterRate        = "cluster_requests_per_second"
	LimitClusterConcurrency = "cluster_concurrent_evaluations"
)

// AdminAPI is the source of the admin API's evaluations (POST
// .../evaluate, the web UI's Test page): they count against the tenant's
// limits like one more cluster, always held to a cluster's share, so that
// a token holder running evaluations in a loop never takes more than half
// of what the tenant's clusters may use. Cluster ids are positive.
const AdminAPI int64 = 0

// ClusterShare is how much of each of its tenant's limits on requests per
// second and concurrent evaluations one cluster may use on a replica,
// when the tenant has more than one cluster: half (rounded up, at least
// one evaluation). One cluster's flood (a leaked URL secret, a runaway
// controller) then leaves its siblings at least the other half, however
// long it lasts; a cluster of its own the tenant's limits need not share.
// Half, not 1/N: a tenant's clusters are seldom equally busy, and a share
// of 1/N would make the busiest cluster of a ten-cluster tenant live on a
// tenth of the limits the operator chose.
const ClusterShare = 0.5

func clusterConcurrency(conc int) int { return max(1, int(math.Ceil(float64(conc)*ClusterShare))) }

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
	// clusters says how many clusters a tenant has; nil: always more
	// than one (every cluster is held to its share).
	clusters func(tenantID int64) int

	// lane, when set, runs the evaluations of tenants whose average CEL
	// cost per request is over laneAfter (see Lane).
	lane      *Lane
	laneAfter int64

	mu        sync.Mutex
	overrides map[int64]Limits
	tenants   map[int64]*tenantState
}

type tenantState struct {
	gate
	// avgCost is the moving average of the tenant's CEL cost per
	// request; onLane says whether its evaluations run on the
	// low-priority lane.
	avgCost int64
	onLane  bool
	// sources are the tenant's clusters (and AdminAPI) with their
	// shares; as many as the tenant has clusters.
	sources map[int64]*gate
}

// gate is the state of one concurrency limit and one rate limit.
type gate struct {
	// slots holds a token per evaluation in progress; its capacity is the
	// concurrency it was made for (conc). A change makes a new channel:
	// evaluations in progress release into the one they took.
	slots chan struct{}
	conc  int
	// The token bucket of the rate limit, made for rate.
	tokens, rate float64
	last         time.Time
}

// refill brings the bucket to now for rate, whose burst is one second's
// worth and at least minBurst requests. A new or changed rate starts with
// a full burst: a raised limit takes effect at once.
func (g *gate) refill(rate, minBurst float64, now time.Time) {
	burst := math.Max(minBurst, rate)
	if g.last.IsZero() || g.rate != rate {
		g.tokens, g.rate = burst, rate
	} else {
		g.tokens = math.Min(burst, g.tokens+now.Sub(g.last).Seconds()*rate)
	}
	g.last = now
}

// wait is how long until the bucket holds a token.
func (g *gate) wait() time.Duration {
	return time.Duration((1 - g.tokens) / g.rate * float64(time.Second))
}

// slotsFor returns the gate's slots for a concurrency of conc.
func (g *gate) slotsFor(conc int) chan struct{} {
	if g.conc != conc {
		g.slots, g.conc = make(chan struct{}, conc), conc
	}
	return g.slots
}

// NewLimiter returns a limiter with the given defaults (zero fields: no
// limit) and the overrides of store (nil: none).
func NewLimiter(defaults Limits, store *Store, logger *slog.Logger) *Limiter {
	return &Limiter{defaults: defaults, store: store, logger: logger, maxWait: time.Second, now: time.Now,
		overrides: map[int64]Limits{}, tenants: map[int64]*tenantState{}}
}

// CountClusters tells the limiter how many clusters each tenant has, so
// that a tenant's only cluster may use all of its limits (ClusterShare).
// f must return at once; it is called on every request.
func (l *Limiter) CountClusters(f func(tenantID int64) int) { l.clusters = f }

// shared says whether source is held to its share of the tenant's limits.
func (l *Limiter) shared(tenantID, source int64) bool {
	return source == AdminAPI || l.clusters == nil || l.clusters(tenantID) != 1
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

// CostLimit is the CEL cost limit of one of the tenant's requests. A
// tenant without one gets a limit no request reaches rather than none:
// the evaluator then still counts each request's cost, which decides
// whether the tenant evaluates on the low-priority lane and which a trace
// shows.
func (l *Limiter) CostLimit(tenantID int64) int64 {
	if c := l.For(tenantID).CELCostPerRequest; c > 0 {
		return c
	}
	return math.MaxInt64
}

// Admit counts one request of the tenant from source (a cluster id, or
// AdminAPI) against the tenant's rate and the source's share of it. A
// refusal is a TooManyRequests error, with how long until a request would
// pass and the name of the limit that refused it.
func (l *Limiter) Admit(tenantID, source int64) (time.Duration, string, error) {
	shared := l.shared(tenantID, source)
	l.mu.Lock()
	defer l.mu.Unlock()
	rate := l.defaults.Over(l.overrides[tenantID]).RequestsPerSecond
	if rate <= 0 {
		return 0, "", nil
	}
	t := l.state(tenantID)
	now := l.now()
	var s *gate
	if shared {
		// The tenant's burst holds at least two requests: at one request,
		// a flooding source's burst of one would empty it.
		t.refill(rate, 2, now)
		s = t.source(source)
		s.refill(rate*ClusterShare, 1, now)
		// The source's share first: when both are spent, the source is
		// the one sending too much.
		if s.tokens < 1 {
			return s.wait(), LimitClusterRate, fault.Errorf(fault.TooManyRequests,
				"%s over its share of its tenant's limit on this replica: %g of %g requests per second", sourceName(source), s.rate, rate)
		}
	}
	if !shared {
		t.refill(rate, 1, now)
	}
	if t.tokens < 1 {
		return t.wait(), LimitRate, fault.Errorf(fault.TooManyRequests,
			"tenant over its limit of %g requests per second on this replica", rate)
	}
	t.tokens--
	if s != nil {
		s.tokens--
	}
	return 0, "", nil
}

func sourceName(source int64) string {
	if source == AdminAPI {
		return "the admin API's evaluations are"
	}
	return "cluster"
}

// Acquire waits for one of the tenant's evaluation slots, and first for
// one of source's share of them, at most a second in all and never past
// ctx. The caller must call release when its evaluation ends; release may
// be called more than once (deferred, in case the evaluation panics, and
// as soon as it ends). A refusal is a TooManyRequests error, with the name
// of the limit that refused it.
//
// A source's requests beyond its share wait at its own gate, not in the
// tenant's queue: however many a flooding cluster sends, at most its
// share of them hold or wait for the tenant's slots, so a sibling's
// request is next in line as soon as a slot frees, even when the tenant
// has one slot.
func (l *Limiter) Acquire(ctx context.Context, tenantID, source int64) (release func(), limit string, _ error) {
	shared := l.shared(tenantID, source)
	l.mu.Lock()
	conc := l.defaults.Over(l.overrides[tenantID]).ConcurrentEvaluations
	if conc <= 0 {
		l.mu.Unlock()
		return func() {}, "", nil
	}
	t := l.state(tenantID)
	slots := t.slotsFor(conc)
	var own chan struct{}
	if shared {
		own = t.source(source).slotsFor(clusterConcurrency(conc))
	}
	l.mu.Unlock()
	w := waiter{ctx: ctx, max: l.maxWait}
	defer w.stop()
	if own != nil && !w.take(own) {
		return nil, LimitClusterConcurrency, fault.Errorf(fault.TooManyRequests,
			"%s over its share of its tenant's limit on this replica: %d of %d concurrent evaluations",
			sourceName(source), cap(own), conc)
	}
	if !w.take(slots) {
		if own != nil {
			<-own
		}
		return nil, LimitConcurrency, fault.Errorf(fault.TooManyRequests,
			"tenant over its limit of %d concurrent evaluations on this replica", conc)
	}
	var released atomic.Bool
	return func() {
		if released.CompareAndSwap(false, true) {
			// The tenant's slot first: a sibling waiting for it gets it
			// before this source's next request passes its own gate.
			<-slots
			if own != nil {
				<-own
			}
		}
	}, "", nil
}

// waiter waits for slots, at most max in all and never past ctx; its
// timer starts at the first wait, so a free slot costs none.
type waiter struct {
	ctx   context.Context
	max   time.Duration
	timer *time.Timer
}

func (w *waiter) take(slots chan struct{}) bool {
	select {
	case slots <- struct{}{}:
		return true
	default:
	}
	if w.timer == nil {
		w.timer = time.NewTimer(w.max)
	}
	select {
	case slots <- struct{}{}:
		return true
	case <-w.timer.C:
	case <-w.ctx.Done():
	}
	return false
}

func (w *waiter) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

func (l *Limiter) state(tenantID int64) *tenantState {
	t := l.tenants[tenantID]
	if t == nil {
		t = &tenantState{}
		l.tenants[tenantID] = t
	}
	return t
}

func (t *tenantState) source(id int64) *gate {
	if t.sources == nil {
		t.sources = map[int64]*gate{}
	}
	g := t.sources[id]
	if g == nil {
		g = &gate{}
		t.sources[id] = g
	}
	return g
}
