package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/portcullis-dev/portcullis/internal/database"
	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/inventory"
	"github.com/portcullis-dev/portcullis/internal/policystore"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

// openDatabase opens the pools and waits for PostgreSQL, retrying until
// ctx ends; it refuses to go on if the schema is not current.
func (m *Main) openDatabase(ctx context.Context) error {
	cfg := database.Config{URL: m.Config.DatabaseURL, DirectURL: m.Config.DatabaseDirectURL}
	if m.Tracing.Enabled() {
		cfg.Tracer = database.NewQueryTracer(m.Tracing.Provider)
	}
	pools, err := database.OpenPools(cfg)
	if err != nil {
		return err
	}
	m.Pool, m.DirectPool = pools.Pool, pools.Direct
	m.pools = pools
	if cfg.Split() {
		m.Logger.Info("database pool split: LISTEN and partition maintenance connect directly",
			"exec_mode", pools.ExecMode.String())
	}
	if err := database.WaitCurrent(ctx, m.Pool, m.Logger); err != nil {
		return err
	}
	m.dbReached.Store(true)
	return nil
}

// setupTenancy wires the tenancy store and the authenticator of webhook
// requests, which keeps every credential in memory.
func (m *Main) setupTenancy(ctx, bg context.Context) {
	m.Tenancy = tenancy.NewStore(m.Pool, m.ClientCA)
	m.Auth = tenancy.NewAuthenticator(m.Pool, tenancy.AuthOptions{Logger: m.Logger})
	m.Auth.Subscribe(m.Listener)
	// Load once before serving, so a fresh replica is ready at once; on
	// failure Auth.Run retries and /readyz says why meanwhile.
	if err := m.Auth.Load(ctx); err != nil {
		m.Logger.Warn("credentials not loaded yet", "error", err)
	}
	m.Health.AddReadyCheck("credentials", func(context.Context) error {
		if !m.Auth.Ready() {
			return errors.New("credentials not loaded yet")
		}
		return nil
	})
	m.wg.Add(1)
	go func() { defer m.wg.Done(); _ = m.Auth.Run(bg) }()
}

// setupPolicies wires the policy store, its snapshot cache (one warm-up
// attempt before serving, retried by Run; /readyz waits for it) and the
// namespace inventory.
func (m *Main) setupPolicies(bg context.Context) error {
	m.Policies = policystore.New(m.Pool)
	var err error
	only, except := m.Config.tenantLists()
	m.PolicyCache, err = policystore.NewCache(m.Policies, policystore.CacheConfig{
		MaxTenants: m.Config.PolicyCacheTenants, MaxBytes: m.cacheBytes,
		ResyncInterval: m.Config.PolicyResync, Logger: m.Logger, Registry: m.Registry,
		Tenants: only, ExcludeTenants: except})
	if err != nil {
		return fmt.Errorf("policy cache: %w", err)
	}
	m.PolicyCache.Subscribe(m.Listener)
	if err := m.PolicyCache.WarmUp(bg); err != nil {
		m.Logger.Warn("policy cache not warmed up yet", "error", err)
	}
	m.Inventory = inventory.New(m.Pool)
	m.Inventory.SetDefaultBounds(inventory.Bounds{Namespaces: m.Config.MaxNamespacesPerCluster, CRDs: m.Config.MaxCRDsPerCluster})
	m.Namespaces, err = inventory.NewCache(m.Inventory, inventory.Config{
		ProvisionalTTL: m.Config.ProvisionalNamespaceTTL, Logger: m.Logger, Registry: m.Registry})
	if err != nil {
		return fmt.Errorf("namespace inventory: %w", err)
	}
	m.Namespaces.Subscribe(m.Listener)
	m.Health.AddReadyCheck("policies", func(context.Context) error { return m.PolicyCache.Ready() })
	m.wg.Add(2)
	go func() { defer m.wg.Done(); _ = m.PolicyCache.Run(bg) }()
	go func() { defer m.wg.Done(); _ = m.Namespaces.Run(bg) }()
	return nil
}

// setupDecisions starts partition maintenance and, unless a test set
// Main.Recorder, the database recorder. Spill files of an earlier run are
// replayed in the background.
func (m *Main) setupDecisions(bg context.Context) error {
	m.Decisions = decisions.NewStore(m.Pool)
	// Partition maintenance holds a session (an advisory lock around
	// DETACH CONCURRENTLY): it goes direct, never through PgBouncer.
	parts := &decisions.Partitions{Pool: m.DirectPool, Retention: m.Config.DecisionRetention, Logger: m.Logger}
	m.wg.Add(1)
	go func() { defer m.wg.Done(); _ = parts.Run(bg) }()
	if m.Recorder != nil || !m.Config.DecisionStore {
		return nil
	}
	var err error
	m.DecisionRecorder, err = decisions.NewPGRecorder(decisions.RecorderConfig{
		Pool:       m.Pool,
		SpillDir:   filepath.Join(m.Config.StateDir, "decisions"),
		QueueSize:  m.Config.DecisionQueueSize,
		BatchRows:  m.Config.DecisionBatchRows,
		Retention:  m.Config.DecisionRetention,
		Registerer: m.Registry,
		Logger:     m.Logger,
	})
	if err != nil {
		return fmt.Errorf("decision recorder: %w", err)
	}
	return nil
}

// recorder is where decisions go: Main.Recorder when a test set one, else
// the database (unless --decision-store=false); also the log under
// --decision-log. Nil when nothing keeps them.
func (m *Main) recorder() decisions.Recorder {
	var rs decisions.Recorders
	switch {
	case m.Recorder != nil:
		rs = append(rs, m.Recorder)
	case m.DecisionRecorder != nil:
		rs = append(rs, m.DecisionRecorder)
	}
	if m.Config.DecisionLog {
		rs = append(rs, decisions.LogRecorder{Logger: m.Logger})
	}
	switch len(rs) {
	case 0:
		return nil
	case 1:
		return rs[0]
	}
	return rs
}
