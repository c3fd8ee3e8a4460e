// Command gateway is the Portcullis server: the webhook that apiservers
// call, the admin API, and the operations endpoints.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/api"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/database"
	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/gctune"
	"github.com/portcullis-dev/portcullis/internal/inventory"
	"github.com/portcullis-dev/portcullis/internal/ops"
	"github.com/portcullis-dev/portcullis/internal/pgnotify"
	"github.com/portcullis-dev/portcullis/internal/policystore"
	"github.com/portcullis-dev/portcullis/internal/telemetry"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
	"github.com/portcullis-dev/portcullis/internal/tlsutil"
	"github.com/portcullis-dev/portcullis/internal/webhook"
)

func main() {
	cfg, err := ParseConfig(os.Args[1:], os.Getenv)
	var usage usageError
	if errors.As(err, &usage) {
		usage.Usage(os.Stdout)
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gateway: invalid configuration: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	m := NewMain()
	m.Config = cfg
	if err := m.Run(ctx); err != nil {
		m.Logger.Error("gateway failed to start", "error", err)
		_ = m.Close()
		os.Exit(1)
	}
	<-ctx.Done()
	m.Logger.Info("shutting down", "timeout", cfg.ShutdownTimeout.String())
	if err := m.Close(); err != nil {
		m.Logger.Error("shutdown incomplete", "error", err)
		os.Exit(1)
	}
}

// Main is the whole gateway process; tests run it on :0 addresses.
type Main struct {
	Config   Config
	Logger   *slog.Logger
	Registry *prometheus.Registry
	Health   *ops.Health
	// Tracing exports spans to --otlp-endpoint (a no-op without one); set
	// it before Run to capture spans (tests). Close flushes it.
	Tracing *telemetry.Tracing

	// WebhookMux and AdminMux receive the routes of the two HTTPS
	// listeners. They exist before Run so tests can add routes of their own.
	WebhookMux *http.ServeMux
	AdminMux   *http.ServeMux

	Pool     *pgxpool.Pool
	Listener *pgnotify.Listener
	TLS      *tlsutil.FileSource
	// CAFile is the development CA that signed the serving certificate
	// (set under --dev when no certificate is given).
	CAFile string

	// ClientCA issues and verifies apiservers' client certificates; nil
	// when none is configured. Tenancy stores tenants, clusters and
	// credentials; Auth authenticates webhook requests from memory.
	ClientCA *tenancy.ClientCA
	Tenancy  *tenancy.Store
	Auth     *tenancy.Authenticator

	// Policies stores policy objects; PolicyCache serves compiled tenant
	// snapshots to the webhook. Inventory stores each cluster's inventory;
	// Namespaces serves it from memory.
	Policies  *policystore.Store
	Inventory *inventory.Store
	// Recorder receives one decision per webhook request; set it before Run
	// to capture them (tests), else DecisionRecorder stores them.
	Recorder decisions.Recorder
	// DecisionRecorder writes decisions to the database (nil when Recorder
	// was set); Decisions lists them and their stats for the admin API.
	DecisionRecorder *decisions.PGRecorder
	Decisions        *decisions.Store
	PolicyCache      *policystore.Cache
	Namespaces       *inventory.Cache
	// AdminAPI serves /api/v1 on the admin listener.
	AdminAPI *api.Server

	webhookLn, adminLn, metricsLn    net.Listener
	webhookSrv, adminSrv, metricsSrv *http.Server
	dbReached                        atomic.Bool
	gc                               *gctune.Tuner
	cancel                           context.CancelFunc
	wg                               sync.WaitGroup
}

// NewMain returns a Main with a JSON logger and an empty registry.
func NewMain() *Main {
	return &Main{
		Logger:     slog.New(slog.NewJSONHandler(os.Stderr, nil)),
		Registry:   prometheus.NewRegistry(),
		Health:     ops.NewHealth(),
		WebhookMux: http.NewServeMux(),
		AdminMux:   http.NewServeMux(),
	}
}

// Run validates the configuration, binds the listeners, waits for the
// database (refusing a schema with pending migrations) and starts serving.
// It returns once the gateway serves; Close stops it.
func (m *Main) Run(ctx context.Context) error {
	if err := m.Config.Validate(); err != nil {
		return err
	}
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(m.Config.LogLevel))
	m.Logger = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
	m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if m.Tracing == nil {
		tr, err := telemetry.New(telemetry.Config{Endpoint: m.Config.OTLPEndpoint, ServiceName: "portcullis-gateway", Instance: m.Config.Instance})
		if err != nil {
			return err
		}
		m.Tracing = tr
	}

	bg, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.gc = gctune.Start(uint64(m.Config.GCMinHeap))

	if err := m.setupTLS(); err != nil {
		return err
	}
	if err := m.setupClientCA(); err != nil {
		return err
	}
	m.wg.Add(1)
	go func() { defer m.wg.Done(); m.TLS.Watch(bg) }()

	var err error
	if m.metricsLn, err = net.Listen("tcp", m.Config.MetricsAddr); err != nil {
		return fmt.Errorf("metrics listener: %w", err)
	}
	if m.webhookLn, err = net.Listen("tcp", m.Config.WebhookAddr); err != nil {
		return fmt.Errorf("webhook listener: %w", err)
	}
	if m.adminLn, err = net.Listen("tcp", m.Config.AdminAddr); err != nil {
		return fmt.Errorf("admin listener: %w", err)
	}

	// Health first, so /livez answers and /readyz says why it is not
	// ready while the database is awaited.
	m.Health.AddReadyCheck("database", func(context.Context) error {
		if !m.dbReached.Load() {
			return errors.New("database not reached yet")
		}
		return nil
	})
	m.metricsSrv = m.newServer(m.Health.Handler(m.Registry), nil)
	m.serve(m.metricsSrv, m.metricsLn, false)

	if err := m.openDatabase(ctx); err != nil {
		return err
	}
	m.Registry.MustRegister(database.NewPoolCollector("main", m.Pool))
	m.Listener = pgnotify.New(m.Pool, m.Logger)

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

	// Components are wired here: they subscribe to m.Listener before it runs
	// and add routes to the muxes before the listeners serve.
	if err := m.setupPolicies(bg); err != nil {
		return err
	}
	if err := m.setupDecisions(bg); err != nil {
		return err
	}
	m.setupWebhook()
	if err := m.setupAdminAPI(); err != nil {
		return err
	}

	m.wg.Add(1)
	go func() { defer m.wg.Done(); _ = m.Listener.Run(bg) }()

	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: m.TLS.GetCertificate}
	webhookTLS := tlsCfg.Clone()
	if m.ClientCA != nil {
		// Ask for a client certificate and verify it if given; tokens and
		// basic auth are valid too, so none is required.
		m.ClientCA.ConfigureTLS(webhookTLS)
	}
	m.webhookSrv = m.newServer(m.WebhookMux, webhookTLS)
	m.adminSrv = m.newServer(m.AdminMux, tlsCfg.Clone())
	m.serve(m.webhookSrv, m.webhookLn, true)
	m.serve(m.adminSrv, m.adminLn, true)

	m.Logger.Info("gateway serving",
		"webhook", m.WebhookURL(), "admin", m.AdminURL(), "metrics", m.MetricsURL(), "ca_file", m.CAFile)
	return nil
}

// setupWebhook routes the validate endpoint. Any method reaches the handler,
// which answers 405 with a JSON Status for anything but POST.
func (m *Main) setupWebhook() {
	h := &webhook.Handler{
		Authenticate: m.Auth.Authenticate,
		Snapshot:     m.PolicyCache.Snapshot,
		Namespaces: func(ctx context.Context, tenantID, clusterID int64) (evaluator.NamespaceLookup, error) {
			return m.Namespaces.Lookup(ctx, tenantID, clusterID)
		},
		Learn:            m.Namespaces.LearnNamespace,
		LearnTerminating: m.Namespaces.LearnNamespaceTerminating,
		Recorder:         m.recorder(),
		Metrics:          webhook.NewMetrics(m.Registry, m.Config.MetricsTenantLabel),
		Tracer:           m.Tracing.Provider.Tracer("github.com/portcullis-dev/portcullis/internal/webhook"),
		Propagator:       m.Tracing.Propagator,
		Endpoint:         "validate",
		Logger:           m.Logger,
		Instance:         m.Config.Instance,
		MaxRequestBytes:  m.Config.MaxRequestBytes,
	}
	m.WebhookMux.Handle("/t/{tenant}/validate", h)
}

// setupAdminAPI routes /api/v1 on the admin listener.
func (m *Main) setupAdminAPI() error {
	caFile := m.Config.WebhookCABundle
	switch {
	case caFile == "" && m.CAFile != "":
		caFile = m.CAFile
	case caFile == "":
		caFile = m.Config.TLSCert
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("webhook CA bundle: %w", err)
	}
	webhookURL := m.Config.PublicWebhookURL
	if webhookURL == "" {
		webhookURL = m.WebhookURL()
	}
	m.AdminAPI = &api.Server{
		Tokens:       adminauth.NewStore(m.Pool),
		Tenancy:      m.Tenancy,
		Policies:     m.Policies,
		Inventory:    m.Inventory,
		Audit:        auditlog.NewStore(m.Pool),
		Decisions:    m.Decisions,
		Logger:       m.Logger,
		WebhookURL:   webhookURL,
		CABundle:     ca,
		MaxBodyBytes: m.Config.MaxRequestBytes,
		Snapshot:     m.PolicyCache.Snapshot,
		Namespaces: func(ctx context.Context, tenantID, clusterID int64) (evaluator.NamespaceLookup, error) {
			return m.Namespaces.Lookup(ctx, tenantID, clusterID)
		},
	}
	m.AdminMux.Handle("/api/", m.AdminAPI.Handler())
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

// setupDecisions starts partition maintenance and, unless a test set
// Main.Recorder, the database recorder. Spill files of an earlier run are
// replayed in the background.
func (m *Main) setupDecisions(bg context.Context) error {
	m.Decisions = decisions.NewStore(m.Pool)
	parts := &decisions.Partitions{Pool: m.Pool, Retention: m.Config.DecisionRetention, Logger: m.Logger}
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

// setupPolicies wires the policy store, its snapshot cache (one warm-up
// attempt before serving, retried by Run; /readyz waits for it) and the
// namespace inventory.
func (m *Main) setupPolicies(bg context.Context) error {
	m.Policies = policystore.New(m.Pool)
	var err error
	m.PolicyCache, err = policystore.NewCache(m.Policies, policystore.CacheConfig{
		MaxTenants: m.Config.PolicyCacheTenants, MaxBytes: m.Config.PolicyCacheBytes,
		ResyncInterval: m.Config.PolicyResync, Logger: m.Logger, Registry: m.Registry})
	if err != nil {
		return fmt.Errorf("policy cache: %w", err)
	}
	m.PolicyCache.Subscribe(m.Listener)
	if err := m.PolicyCache.WarmUp(bg); err != nil {
		m.Logger.Warn("policy cache not warmed up yet", "error", err)
	}
	m.Inventory = inventory.New(m.Pool)
	m.Namespaces, err = inventory.NewCache(m.Inventory, inventory.Config{
		Logger: m.Logger, Registry: m.Registry})
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

func (m *Main) setupTLS() error {
	cert, key := m.Config.TLSCert, m.Config.TLSKey
	if cert == "" {
		d, err := tlsutil.EnsureDevCerts(filepath.Join(m.Config.StateDir, "tls"))
		if err != nil {
			return fmt.Errorf("create development certificates: %w", err)
		}
		cert, key, m.CAFile = d.CertFile, d.KeyFile, d.CAFile
	}
	m.TLS = &tlsutil.FileSource{CertFile: cert, KeyFile: key, Logger: m.Logger}
	return m.TLS.Load()
}

// setupClientCA loads --client-ca-cert/--client-ca-key, or under --dev
// generates a client CA into the state directory. Without either, client
// certificates are off.
func (m *Main) setupClientCA() error {
	var err error
	switch {
	case m.Config.ClientCACert != "":
		m.ClientCA, err = tenancy.LoadClientCA(m.Config.ClientCACert, m.Config.ClientCAKey)
	case m.Config.Dev:
		m.ClientCA, err = tenancy.LoadOrCreateClientCA(filepath.Join(m.Config.StateDir, "tls"))
	default:
		m.Logger.Warn("no --client-ca-cert: apiservers cannot authenticate with client certificates")
	}
	return err
}

// openDatabase waits for PostgreSQL, retrying until ctx ends, and refuses
// to go on if the schema is not current.
func (m *Main) openDatabase(ctx context.Context) error {
	cfg, err := pgxpool.ParseConfig(m.Config.DatabaseURL)
	if err != nil {
		return fmt.Errorf("--database-url: %w", err)
	}
	if m.Pool, err = pgxpool.NewWithConfig(context.Background(), cfg); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	backoff := 200 * time.Millisecond
	for {
		err := database.CheckCurrent(ctx, m.Pool)
		if err == nil {
			m.dbReached.Store(true)
			return nil
		}
		if errors.Is(err, database.ErrPending) {
			return err
		}
		m.Logger.Warn("waiting for the database", "error", err, "retry_in", backoff.String())
		select {
		case <-ctx.Done():
			return fmt.Errorf("database not reached before shutdown: %w", err)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (m *Main) newServer(h http.Handler, tlsCfg *tls.Config) *http.Server {
	srv := &http.Server{
		Handler:   h,
		TLSConfig: tlsCfg,
		// The apiserver sends its headers at once; a slow sender is not one.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    m.Config.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(m.Logger.Handler(), slog.LevelWarn),
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: 1000},
	}
	if tlsCfg != nil {
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
		srv.Protocols.SetHTTP2(true)
	}
	return srv
}

func (m *Main) serve(srv *http.Server, ln net.Listener, useTLS bool) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		var err error
		if useTLS {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Logger.Error("server stopped", "addr", ln.Addr().String(), "error", err)
		}
	}()
}

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
	if m.Pool != nil {
		m.Pool.Close()
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

func listenURL(scheme string, ln net.Listener) string {
	if ln == nil {
		return ""
	}
	addr := ln.Addr().(*net.TCPAddr)
	host := "localhost"
	if !addr.IP.IsUnspecified() && !addr.IP.IsLoopback() {
		host = addr.IP.String()
	}
	return fmt.Sprintf("%s://%s", scheme, net.JoinHostPort(host, fmt.Sprint(addr.Port)))
}

// WebhookURL is the base URL of the webhook listener.
func (m *Main) WebhookURL() string { return listenURL("https", m.webhookLn) }

// AdminURL is the base URL of the admin listener.
func (m *Main) AdminURL() string { return listenURL("https", m.adminLn) }

// MetricsURL is the base URL of the operations listener.
func (m *Main) MetricsURL() string { return listenURL("http", m.metricsLn) }
