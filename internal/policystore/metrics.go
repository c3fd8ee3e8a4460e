package policystore

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Constants of estimateBytes. The evaluator shares compiled programs
// between snapshots with identical expressions, so what a tenant really
// holds depends on its neighbours: the 10 baseline policies (25
// expressions, 11.5 KB of JSON) hold about 33 KB when another tenant has
// the same ones (BenchmarkHeapPerTenant) and about 47 KB more when all
// their expressions are unique (evaluator BenchmarkCompileBaseline's
// heapB/policy, 4.7 KB per policy). A cel-go program is kept only for the
// expressions the fast interpreter declines (about 14 KB each,
// Stats.Programs); the others are planned when cel-go first needs them,
// which the estimate leaves out. Fitted to the unique case, so the byte
// bound does not under-count a snapshot as compiled.
const (
	estimateBase          = 16 << 10
	estimatePerExpression = 2 << 10
	estimatePerProgram    = 14 << 10
	estimatePerJSONByte   = 4
)

type cacheMetrics struct {
	hits, misses, coldUnavailable, staleServed, evictions prometheus.Counter
	loads, resyncs                                        *prometheus.CounterVec
	loadSeconds                                           prometheus.Histogram
}

func newCacheMetrics(c *Cache, reg *prometheus.Registry) cacheMetrics {
	const ns, sub = "portcullis", "policy_cache"
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help})
	}
	m := cacheMetrics{
		hits:   counter("hits_total", "Snapshot requests served from memory."),
		misses: counter("misses_total", "Snapshot requests that found no cached snapshot."),
		coldUnavailable: counter("cold_unavailable_total",
			"Snapshot requests refused (503) because the tenant was not cached and the database was unreachable."),
		staleServed: counter("stale_served_total",
			"Snapshot requests served from memory while the database was unreachable."),
		evictions: counter("evictions_total", "Snapshots evicted by the tenant or byte bound."),
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "loads_total",
			Help: "Snapshot loads from the database, by result."}, []string{"result"}),
		resyncs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "resyncs_total",
			Help: "Periodic comparisons of cached versions with the database, by result."}, []string{"result"}),
		loadSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub,
			Name: "load_seconds", Help: "Time to load and compile one tenant snapshot.",
			Buckets: []float64{.001, .0025, .005, .01, .02, .05, .1, .25, .5, 1, 2.5}}),
	}
	if reg == nil {
		return m
	}
	reg.MustRegister(m.hits, m.misses, m.coldUnavailable, m.staleServed, m.evictions, m.loads, m.resyncs, m.loadSeconds,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "staleness_seconds",
			Help: "How long cached snapshots have gone unverified because the database is unreachable; 0 while it answers."},
			func() float64 { return c.Staleness().Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "tenants",
			Help: "Tenants with a cached snapshot."}, func() float64 { n, _ := c.Len(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "bytes",
			Help: "Approximate heap held by cached snapshots."}, func() float64 { _, b := c.Len(); return float64(b) }),
	)
	return m
}
