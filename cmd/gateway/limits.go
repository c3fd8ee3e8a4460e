package main

import (
	"context"
	"runtime"

	"github.com/portcullis-dev/portcullis/internal/limits"
)

// setupLimits loads the tenants' overrides of the evaluation limits and
// keeps them current. A failed first load leaves the defaults in force
// until the listener connects and loads them again.
func (m *Main) setupLimits(ctx context.Context) {
	defaults := limits.Limits{
		ConcurrentEvaluations: m.Config.TenantConcurrentEvaluations,
		CELCostPerRequest:     m.Config.TenantCELCostPerRequest,
		RequestsPerSecond:     m.Config.TenantRequestsPerSecond,
	}
	if defaults.ConcurrentEvaluations == 0 {
		defaults.ConcurrentEvaluations = limits.DefaultConcurrentEvaluations()
	}
	m.LimitStore = limits.NewStore(m.Pool)
	m.Limits = limits.NewLimiter(defaults, m.LimitStore, m.Logger)
	// A tenant's only cluster may use all of its limits; one of several,
	// its share (limits.ClusterShare).
	m.Limits.CountClusters(m.Auth.Clusters)
	m.Limits.Subscribe(m.Listener)
	if err := m.Limits.Load(ctx); err != nil {
		m.Logger.Warn("tenant limits not loaded yet; the defaults apply", "error", err)
	}
	if m.Config.LowPriorityCost > 0 {
		// After setupTenancy and the default concurrency above: the lane
		// raises GOMAXPROCS, which both size themselves by.
		workers := m.Config.LowPriorityWorkers
		if workers == 0 {
			workers = max(1, runtime.GOMAXPROCS(0)/2)
		}
		m.lane = limits.NewLane(workers, m.Logger)
		m.Registry.MustRegister(m.lane.Collectors()...)
		m.Limits.UseLane(m.lane, m.Config.LowPriorityCost)
	}
}
