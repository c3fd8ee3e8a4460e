package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
)

// Close stops accepting, waits up to --shutdown-timeout for requests in
// flight, then releases everything. It is safe after a failed Run.
func (m *Main) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), m.Config.ShutdownTimeout)
	defer cancel()
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, srv := range []*http.Server{m.webhookSrv, m.adminSrv, m.metricsSrv} {
		if srv == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Shutdown(ctx); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				_ = srv.Close()
			}
		}()
	}
	wg.Wait()
	for _, ln := range []net.Listener{m.webhookLn, m.adminLn, m.metricsLn} {
		if ln != nil {
			_ = ln.Close()
		}
	}
	// Every request is answered now, so every decision is handed over; the
	// recorder writes them while the pool is still open, or spills them to
	// disk if the database or the rest of the shutdown budget is gone.
	if m.DecisionRecorder != nil {
		if err := m.DecisionRecorder.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("decision recorder: %w", err))
		}
	}
	if m.cancel != nil {
		m.cancel()
	}
	m.wg.Wait()
	if m.pools != nil {
		m.pools.Close()
	}
	if m.lane != nil {
		m.lane.Close()
	}
	m.gc.Stop()
	m.gc = nil
	// After the servers, so the spans of the last requests go too. A
	// collector that is away loses spans; it does not fail the shutdown.
	if err := m.Tracing.Shutdown(ctx); err != nil {
		m.Logger.Warn("traces not flushed", "error", err)
	}
	return errors.Join(errs...)
}
