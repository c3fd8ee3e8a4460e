package webhook

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portcullis-dev/portcullis/internal/decisions"
)

// Metrics are the data plane's Prometheus metrics. Labels are bounded:
// tenant and cluster names come from configuration (and the tenant label
// can be switched off); nothing is labelled per request, user or object.
type Metrics struct {
	TenantLabel bool

	requests         *prometheus.CounterVec
	duration         *prometheus.HistogramVec
	panics           prometheus.Counter
	authFailures     *prometheus.CounterVec
	coldUnavailable  prometheus.Counter
	unknownNamespace *prometheus.CounterVec
}

// NewMetrics registers the metrics with reg (nil: unregistered, for tests).
func NewMetrics(reg prometheus.Registerer, tenantLabel bool) *Metrics {
	m := &Metrics{
		TenantLabel: tenantLabel,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_webhook_requests_total",
			Help: "Webhook requests answered, by tenant, operation, verdict and HTTP status.",
		}, []string{"tenant", "operation", "verdict", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "portcullis_webhook_request_duration_seconds",
			Help:    "Time to answer a webhook request, from the first byte read to the answer written.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"tenant"}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portcullis_webhook_panics_total",
			Help: "Webhook requests that panicked and were answered with 500.",
		}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_webhook_authentication_failures_total",
			Help: "Webhook requests refused by authentication, by reason.",
		}, []string{"reason"}),
		coldUnavailable: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portcullis_webhook_cold_unavailable_total",
			Help: "Requests answered 503 because the tenant's policies were not cached and the database was unreachable.",
		}),
		unknownNamespace: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_webhook_unknown_namespace_total",
			Help: "Requests in a namespace the cluster's inventory lacks, where a binding needed it: upload the inventory (admin namespaces import).",
		}, []string{"tenant", "cluster"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.panics, m.authFailures, m.coldUnavailable, m.unknownNamespace)
	}
	return m
}

func (m *Metrics) tenantLabel(name string) string {
	if !m.TenantLabel {
		return ""
	}
	return name
}

func (m *Metrics) observe(d *decisions.Decision) {
	t := m.tenantLabel(d.TenantName)
	m.requests.WithLabelValues(t, d.Operation, string(d.Verdict), strconv.Itoa(d.HTTPStatus)).Inc()
	m.duration.WithLabelValues(t).Observe(d.Latency.Seconds())
}

// Panics is the counter of recovered panics (for tests and dashboards).
func (m *Metrics) Panics() prometheus.Counter { return m.panics }

// ColdUnavailable counts 503s for tenants not cached while the database is away.
func (m *Metrics) ColdUnavailable() prometheus.Counter { return m.coldUnavailable }
