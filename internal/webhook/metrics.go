package webhook

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// Metrics are the data plane's Prometheus metrics. Labels are bounded:
// tenant, cluster, policy and binding names come from configuration (and
// the tenant label can be switched off); nothing is labelled per request,
// user or object.
type Metrics struct {
	TenantLabel bool

	requests       *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	evaluation     *prometheus.HistogramVec
	tenantSeconds  *prometheus.CounterVec
	tenantEvalSecs *prometheus.CounterVec
	// seen holds, by endpoint, the tenants whose counters were
	// pre-initialised. A map under a lock, not a sync.Map: looking a
	// string up in it allocates nothing.
	seenMu           sync.RWMutex
	seen             map[string]map[string]bool
	rejections       *prometheus.CounterVec
	failOpen         *prometheus.CounterVec
	failClosed       *prometheus.CounterVec
	panics           prometheus.Counter
	authFailures     *prometheus.CounterVec
	coldUnavailable  prometheus.Counter
	misdirected      prometheus.Counter
	unknownNamespace *prometheus.CounterVec
	pendingNamespace *prometheus.CounterVec
	missingCRD       *prometheus.CounterVec
	mutations        *prometheus.CounterVec
	mutationFailures *prometheus.CounterVec
	limited          *prometheus.CounterVec
	clusterLimited   *prometheus.CounterVec
}

// Buckets of the duration histograms: the apiserver's webhook timeout is
// at most 30s and 10s by default, and a warm evaluation takes well under a
// millisecond.
var (
	requestBuckets    = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	evaluationBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
)

// NewMetrics registers the metrics with reg (nil: unregistered, for tests).
func NewMetrics(reg prometheus.Registerer, tenantLabel bool) *Metrics {
	// Help says why these labels are bounded: they are not per request.
	const (
		policiesConfigured = " Policy names come from the tenants' configuration, so their number is bounded by it."
		bindingsConfigured = " Policy and binding names come from the tenants' configuration, so their number is bounded by it."
	)
	m := &Metrics{
		TenantLabel: tenantLabel,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_webhook_requests_total",
			Help: "Webhook requests answered, by tenant, endpoint, operation, verdict and HTTP status (200 for every evaluated request, denials included).",
		}, []string{"tenant", "endpoint", "operation", "verdict", "code"}),
		// The latency histograms are fleet-wide: by tenant they were 36
		// series per tenant and replica, most of a tenant's series. A
		// tenant's mean comes from the two counters below.
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "portcullis_webhook_request_duration_seconds",
			Help:    "Time to answer a webhook request, from the first byte read to the answer written, by endpoint (all tenants).",
			Buckets: requestBuckets,
		}, []string{"endpoint"}),
		evaluation: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "portcullis_webhook_evaluation_duration_seconds",
			Help:    "Time to evaluate one request against the tenant's policies (matching, CEL, messages), without decoding or encoding, by endpoint (all tenants).",
			Buckets: evaluationBuckets,
		}, []string{"endpoint"}),
		tenantSeconds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_webhook_tenant_request_seconds_total",
			Help: "Seconds spent answering the tenant's webhook requests; divided by the rate of portcullis_webhook_requests_total, the tenant's mean latency.",
		}, []string{"tenant"}),
		tenantEvalSecs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_webhook_tenant_evaluation_seconds_total",
			Help: "Seconds spent evaluating the tenant's requests against its policies.",
		}, []string{"tenant"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_policy_rejections_total",
			Help: "Bindings that denied a request, by tenant, policy, binding and the status code of the answer (as the apiserver's apiserver_admission_webhook_rejection_count)." + bindingsConfigured,
		}, []string{"tenant", "policy", "binding", "code"}),
		failOpen: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_policy_fail_open_total",
			Help: "Bindings whose failurePolicy let a request through after an error, by tenant, policy and cause (error, timeout, compile_error, unknown_namespace)." + policiesConfigured,
		}, []string{"tenant", "policy", "cause"}),
		failClosed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_policy_fail_closed_total",
			Help: "Bindings whose failurePolicy denied a request because of an error, by tenant, policy and cause (error, timeout, compile_error, unknown_namespace)." + policiesConfigured,
		}, []string{"tenant", "policy", "cause"}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portcullis_webhook_panics_total",
			Help: "Webhook requests that panicked: answered with 500, or left with their answer when it was already written.",
		}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_webhook_authentication_failures_total",
			Help: "Webhook requests refused by authentication, by reason.",
		}, []string{"reason"}),
		misdirected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portcullis_webhook_misdirected_total",
			Help: "Requests answered 421 because they name a tenant this deployment does not answer for (--tenants, --exclude-tenants).",
		}),
		coldUnavailable: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portcullis_webhook_cold_unavailable_total",
			Help: "Requests answered 503 because the tenant's policies were not cached and the database was unreachable.",
		}),
		unknownNamespace: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_webhook_unknown_namespace_total",
			Help: "Requests in a namespace the cluster's inventory lacks, where a binding needed it: upload the inventory (admin namespaces import).",
		}, []string{"tenant", "cluster"}),
		pendingNamespace: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_webhook_pending_namespace_total",
			Help: "Requests where a binding read namespaceObject of a namespace whose stored object a change the gateway allowed, and nothing confirmed yet, supersedes: the namespace is unknown to it and its failurePolicy decides (also counted in portcullis_webhook_unknown_namespace_total). Run the namespace sync, or upload, to confirm.",
		}, []string{"tenant", "cluster"}),
		missingCRD: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_inventory_crd_missing_total",
			Help: "Requests for a custom resource whose CustomResourceDefinition the cluster's inventory lacks, where a binding needed it: upload the CRDs (admin crds import).",
		}, []string{"tenant", "cluster"}),
		mutations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_policy_mutations_total",
			Help: "Requests to /mutate in which a MutatingAdmissionPolicy's mutations applied (even ones that changed nothing, as the plugin counts them), by tenant and policy, once per request and policy." + policiesConfigured,
		}, []string{"tenant", "policy"}),
		mutationFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_policy_mutation_failures_total",
			Help: "MutatingAdmissionPolicy bindings that failed on /mutate, whatever their failurePolicy did with it, by tenant, policy and cause (error, timeout, compile_error, unknown_namespace)." + policiesConfigured,
		}, []string{"tenant", "policy", "cause"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_webhook_tenant_limited_total",
			Help: "Requests a tenant limit stopped, by tenant and limit: requests_per_second and concurrent_evaluations answer 429 (the webhook's failurePolicy decides), cel_cost_per_request stops the evaluations past the limit with the apiserver's out-of-budget error (each binding's failurePolicy decides).",
		}, []string{"tenant", "limit"}),
		clusterLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_webhook_cluster_limited_total",
			Help: "Requests refused with 429 because their cluster used up its share of its tenant's limits (cluster_requests_per_second, cluster_concurrent_evaluations), by tenant, cluster and limit; also counted in portcullis_webhook_tenant_limited_total.",
		}, []string{"tenant", "cluster", "limit"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.evaluation, m.tenantSeconds, m.tenantEvalSecs, m.rejections, m.failOpen, m.failClosed,
			m.panics, m.authFailures, m.coldUnavailable, m.misdirected, m.unknownNamespace, m.pendingNamespace, m.missingCRD,
			m.mutations, m.mutationFailures, m.limited, m.clusterLimited,
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "portcullis_evaluator_exact_reevaluations_total",
				Help: "Requests evaluated a second time without the fast path, because the CEL cost budget checked against cost bounds ran out.",
			}, func() float64 { return float64(evaluator.ExactReevaluations()) }))
	}
	return m
}

// clusterLabel follows the tenant label: cluster names are per tenant, so
// a cluster label alone keeps the tenant-by-cluster cardinality that
// --metrics-tenant-label=false is there to remove.
func (m *Metrics) clusterLabel(name string) string { return m.tenantLabel(name) }

func (m *Metrics) tenantLabel(name string) string {
	if !m.TenantLabel {
		return ""
	}
	return name
}

// observe counts one answered request and what its bindings did: results
// are the evaluator's, nil when the request was not evaluated.
func (m *Metrics) observe(endpoint string, d *decisions.Decision, results []evaluator.BindingResult) {
	t := m.tenantLabel(d.TenantName)
	m.preinit(t, endpoint)
	m.requests.WithLabelValues(t, endpoint, d.Operation, string(d.Verdict), strconv.Itoa(d.HTTPStatus)).Inc()
	m.duration.WithLabelValues(endpoint).Observe(d.Latency.Seconds())
	m.tenantSeconds.WithLabelValues(t).Add(d.Latency.Seconds())
	for i := range results {
		b := &results[i]
		if b.Denied {
			m.rejections.WithLabelValues(t, b.Policy, b.Binding, strconv.Itoa(int(d.Code))).Inc()
		}
		if !b.FailurePolicyApplied {
			continue
		}
		if b.Denied {
			m.failClosed.WithLabelValues(t, b.Policy, failureCause(b)).Inc()
		} else {
			m.failOpen.WithLabelValues(t, b.Policy, failureCause(b)).Inc()
		}
	}
}

// observeMutations counts what the mutating policies did in one /mutate
// request: each policy that mutated once (it may have several bindings,
// and a second pass), and each binding that failed.
func (m *Metrics) observeMutations(tenant string, results []evaluator.BindingResult) {
	t := m.tenantLabel(tenant)
	for i := range results {
		b := &results[i]
		if b.Outcome == evaluator.OutcomeError {
			m.mutationFailures.WithLabelValues(t, b.Policy, failureCause(b)).Inc()
		}
		if b.Mutated && !mutatedBefore(results[:i], b.Policy) {
			m.mutations.WithLabelValues(t, b.Policy).Inc()
		}
	}
}

func mutatedBefore(results []evaluator.BindingResult, policy string) bool {
	for i := range results {
		if results[i].Mutated && results[i].Policy == policy {
			return true
		}
	}
	return false
}

func (m *Metrics) observeEvaluation(tenant, endpoint string, took time.Duration) {
	m.evaluation.WithLabelValues(endpoint).Observe(took.Seconds())
	m.tenantEvalSecs.WithLabelValues(m.tenantLabel(tenant)).Add(took.Seconds())
}

// preinit makes a tenant's allowed and denied CREATE counters of an
// endpoint exist at 0 from its first request, so that a dashboard's
// "denied" shows 0, not "no data", for a tenant that was never denied.
// Two series per tenant and endpoint; the other combinations appear when
// they happen.
func (m *Metrics) preinit(tenant, endpoint string) {
	m.seenMu.RLock()
	done := m.seen[endpoint][tenant]
	m.seenMu.RUnlock()
	if done {
		return
	}
	m.seenMu.Lock()
	if m.seen == nil {
		m.seen = map[string]map[string]bool{}
	}
	if m.seen[endpoint] == nil {
		m.seen[endpoint] = map[string]bool{}
	}
	m.seen[endpoint][tenant] = true
	m.seenMu.Unlock()
	for _, v := range []decisions.Verdict{decisions.VerdictAllowed, decisions.VerdictDenied} {
		m.requests.WithLabelValues(tenant, endpoint, "CREATE", string(v), "200")
	}
}

// Panics is the counter of recovered panics (for tests and dashboards).
func (m *Metrics) Panics() prometheus.Counter { return m.panics }

// ColdUnavailable counts 503s for tenants not cached while the database is away.
func (m *Metrics) ColdUnavailable() prometheus.Counter { return m.coldUnavailable }

// Misdirected is the counter of requests for a tenant this deployment
// does not answer for.
func (m *Metrics) Misdirected() prometheus.Counter { return m.misdirected }

// Limited is the counter of requests a tenant limit stopped.
func (m *Metrics) Limited() *prometheus.CounterVec { return m.limited }

// ClusterLimited is the counter of requests a cluster's share of its
// tenant's limits stopped.
func (m *Metrics) ClusterLimited() *prometheus.CounterVec { return m.clusterLimited }
