package limits

import (
	"context"
	"runtime"
	"time"
)

// UseLane makes Run send the evaluations of tenants whose average
// evaluation time is over after to lane.
func (l *Limiter) UseLane(lane *Lane, after time.Duration) {
	l.lane, l.laneAfter = lane, after
}

// Run runs one evaluation of the tenant, f: on the low-priority lane when
// the tenant's evaluations have proved expensive, in the caller's
// goroutine otherwise. An error means f did not run (the lane had no
// worker free before ctx ended); it is a TooManyRequests error.
func (l *Limiter) Run(ctx context.Context, tenantID int64, f func()) error {
	if l.lane == nil {
		f()
		return nil
	}
	l.mu.Lock()
	onLane := l.state(tenantID).onLane
	l.mu.Unlock()
	var spent time.Duration
	if onLane {
		d, err := l.lane.Run(ctx, f)
		if err != nil {
			return err
		}
		spent = d
	} else {
		spent = cpuTime(f)
	}
	l.observe(tenantID, spent)
	return nil
}

// observe folds one evaluation's time into the tenant's average (weight
// 1/4: one near-cost-limit request is enough to move a tenant to the
// lane, a single slow one of an ordinary tenant is not) and moves the
// tenant on or off the lane, with hysteresis so that a tenant near the
// threshold does not flap.
func (l *Limiter) observe(tenantID int64, spent time.Duration) {
	l.mu.Lock()
	t := l.state(tenantID)
	t.avg += (spent - t.avg) / 4
	was := t.onLane
	switch {
	case !t.onLane && t.avg > l.laneAfter:
		t.onLane = true
	case t.onLane && t.avg < l.laneAfter/2:
		t.onLane = false
	}
	now, avg := t.onLane, t.avg
	l.mu.Unlock()
	if now != was && l.logger != nil {
		if now {
			l.logger.Info("tenant's evaluations move to the low-priority lane", "tenant_id", tenantID,
				"average", avg.Round(time.Microsecond), "threshold", l.laneAfter)
		} else {
			l.logger.Info("tenant's evaluations leave the low-priority lane", "tenant_id", tenantID,
				"average", avg.Round(time.Microsecond), "threshold", l.laneAfter)
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

// cpuTime runs f and returns the CPU time it took: with the goroutine
// locked to its thread, the thread's CPU time is f's. Wall time would
// count the time f waited for a core, and on a saturated replica move
// every tenant to the lane.
func cpuTime(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPUTime()
	f()
	return threadCPUTime() - start
}
