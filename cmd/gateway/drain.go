package main

import (
	"context"
	"errors"
	"time"
)

// errDraining is what /readyz says while the gateway drains.
var errDraining = errors.New("shutting down: draining before the listeners close")

// Drain is the first step of a shutdown: /readyz fails at once, so that
// endpoints and load balancers stop sending new connections here, while
// every listener keeps serving for delay (requests already routed here, and
// those sent before the change reaches every load balancer, still get
// answers). It returns early when ctx ends (a second signal). Close then
// stops the listeners.
func (m *Main) Drain(ctx context.Context, delay time.Duration) {
	m.draining.Store(true)
	if delay <= 0 {
		return
	}
	m.Logger.Info("draining: not ready, still serving", "delay", delay.String())
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// drainCheck is the ready check Drain fails.
func (m *Main) drainCheck(context.Context) error {
	if m.draining.Load() {
		return errDraining
	}
	return nil
}
