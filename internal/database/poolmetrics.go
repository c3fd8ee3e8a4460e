package database

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// PoolCollector exports a pgxpool's statistics. It reads pool.Stat() once
// per scrape, so the request path pays nothing for it.
type PoolCollector struct {
	pool  *pgxpool.Pool
	descs []*prometheus.Desc
}

// poolMetric is one statistic of pgxpool.Stat.
type poolMetric struct {
	name, help string
	kind       prometheus.ValueType
	value      func(*pgxpool.Stat) float64
}

var poolMetrics = []poolMetric{
	{"acquired_connections", "Connections currently checked out of the pool.", prometheus.GaugeValue,
		func(s *pgxpool.Stat) float64 { return float64(s.AcquiredConns()) }},
	{"idle_connections", "Connections open and idle in the pool.", prometheus.GaugeValue,
		func(s *pgxpool.Stat) float64 { return float64(s.IdleConns()) }},
	{"constructing_connections", "Connections being opened.", prometheus.GaugeValue,
		func(s *pgxpool.Stat) float64 { return float64(s.ConstructingConns()) }},
	{"total_connections", "Connections in the pool: acquired, idle and being opened.", prometheus.GaugeValue,
		func(s *pgxpool.Stat) float64 { return float64(s.TotalConns()) }},
	{"max_connections", "Most connections the pool may hold (pool_max_conns).", prometheus.GaugeValue,
		func(s *pgxpool.Stat) float64 { return float64(s.MaxConns()) }},
	{"acquires_total", "Connections acquired from the pool.", prometheus.CounterValue,
		func(s *pgxpool.Stat) float64 { return float64(s.AcquireCount()) }},
	{"acquire_seconds_total", "Time spent acquiring connections, waits included.", prometheus.CounterValue,
		func(s *pgxpool.Stat) float64 { return s.AcquireDuration().Seconds() }},
	{"empty_acquires_total", "Acquires that found no idle connection and had to wait for one or open one.", prometheus.CounterValue,
		func(s *pgxpool.Stat) float64 { return float64(s.EmptyAcquireCount()) }},
	{"empty_acquire_wait_seconds_total", "Time spent by acquires that found no idle connection.", prometheus.CounterValue,
		func(s *pgxpool.Stat) float64 { return s.EmptyAcquireWaitTime().Seconds() }},
	{"canceled_acquires_total", "Acquires abandoned because their context ended.", prometheus.CounterValue,
		func(s *pgxpool.Stat) float64 { return float64(s.CanceledAcquireCount()) }},
	{"new_connections_total", "Connections opened.", prometheus.CounterValue,
		func(s *pgxpool.Stat) float64 { return float64(s.NewConnsCount()) }},
	{"max_lifetime_destroys_total", "Connections closed because they reached pool_max_conn_lifetime.", prometheus.CounterValue,
		func(s *pgxpool.Stat) float64 { return float64(s.MaxLifetimeDestroyCount()) }},
	{"max_idle_destroys_total", "Connections closed because they stayed idle longer than pool_max_conn_idle_time.", prometheus.CounterValue,
		func(s *pgxpool.Stat) float64 { return float64(s.MaxIdleDestroyCount()) }},
}

// NewPoolCollector returns a collector of pool's statistics, named
// portcullis_db_pool_*, with a constant pool label so that a process with
// several pools can register one collector for each.
func NewPoolCollector(name string, pool *pgxpool.Pool) *PoolCollector {
	c := &PoolCollector{pool: pool}
	for _, m := range poolMetrics {
		c.descs = append(c.descs, prometheus.NewDesc("portcullis_db_pool_"+m.name, m.help, nil, prometheus.Labels{"pool": name}))
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *PoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *PoolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stat()
	for i, m := range poolMetrics {
		ch <- prometheus.MustNewConstMetric(c.descs[i], m.kind, m.value(s))
	}
}
