package limits

import (
	"context"
)

// UseLane makes Run send the evaluations of tenants whose average CEL
// cost per request is over after to lane.
func (l *Limiter) UseLane(lane *Lane, after int64) {
	l.lane, l.laneAfter = lane, after
}

// Run runs one evaluation of the tenant, f, which returns the CEL cost it
// spent: on the low-priority lane when the tenant's requests have proved
// expensive, in the caller's goroutine otherwise. An error means f did not
// run (the lane had no worker free before ctx ended, or it is closed).
func (l *Limiter) Run(ctx context.Context, tenantID int64, f func() int64) error {
	if l.lane == nil {
		f()
		return nil
	}
	l.mu.Lock()
	onLane := l.state(tenantID).onLane
	l.mu.Unlock()
	var cost int64
	if onLane {
		if err := l.lane.Run(ctx, func() { cost = f() }); err != nil {
			return err
		}
	} else {
		cost = f()
	}
	l.observe(tenantID, cost)
	return nil
}

// observe folds one request's CEL cost into the tenant's average (weight
// 1/4: one near-cost-limit request is enough to move a tenant to the
// lane, a single costly one of an ordinary tenant is not) and moves the
// tenant on or off the lane, with hysteresis so that a tenant near the
// threshold does not flap. Cost, not time: it is what the tenant's
// policies ask for, whatever the replica's load, and the evaluator counts
// it anyway (time would need the thread's CPU clock around every
// evaluation, which cost the gateway 11% of its throughput).
func (l *Limiter) observe(tenantID, cost int64) {
	l.mu.Lock()
	t := l.state(tenantID)
	t.avgCost += (cost - t.avgCost) / 4
	was := t.onLane
	switch {
	case !t.onLane && t.avgCost > l.laneAfter:
		t.onLane = true
	case t.onLane && t.avgCost < l.laneAfter/2:
		t.onLane = false
	}
	now, avg := t.onLane, t.avgCost
	l.mu.Unlock()
	if now != was && l.logger != nil {
		if now {
			l.logger.Info("tenant's evaluations move to the low-priority lane", "tenant_id", tenantID,
				"average_cost", avg, "threshold", l.laneAfter)
		} else {
			l.logger.Info("tenant's evaluations leave the low-priority lane", "tenant_id", tenantID,
				"average_cost", avg, "threshold", l.laneAfter)
		}
	}
}

// OnLane says whether the tenant's evaluations run on the low-priority
// lane.
func (l *Limiter) OnLane(tenantID int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.tenants[tenantID]
	return t != nil && t.onLane
}
