// Command gateway is the Portcullis server: the webhook that apiservers
// call, the admin API, and the operations endpoints.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/portcullis-dev/portcullis/internal/api"
	"github.com/portcullis-dev/portcullis/internal/database"
	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/gctune"
	"github.com/portcullis-dev/portcullis/internal/inventory"
	"github.com/portcullis-dev/portcullis/internal/limits"
	"github.com/portcullis-dev/portcullis/internal/ops"
	"github.com/portcullis-dev/portcullis/internal/pgnotify"
	"github.com/portcullis-dev/portcullis/internal/policystore"
	"github.com/portcullis-dev/portcullis/internal/telemetry"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
	"github.com/portcullis-dev/portcullis/internal/tlsutil"
)

func main() {
	if len(os.Args) == 2 && (os.Args[1] == "--version" || os.Args[1] == "-version") {
		printVersion(os.Stdout)
		return
	}
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
	stop() // a second signal now ends the drain (and then the process)
	again, stopAgain := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stopAgain()
	m.Drain(again, cfg.ShutdownDelay)
	m.Logger.Info("shutting down", "timeout", cfg.ShutdownTimeout.String())
	if err := m.Close(); err != nil {
		m.Logger.Error("shutdown incomplete", "error", err)
		os.Exit(1)
	}
}

// Main is the whole gateway process; tests run it on :0 addresses.
type Main struct {
	Config Config
	Logger *slog.Logger
	// LogOutput receives the JSON log that Run sets up (os.Stderr when
	// nil); tests capture it.
	LogOutput io.Writer
	Registry  *prometheus.Registry
	Health    *ops.Health
	// Tracing exports spans to --otlp-endpoint (a no-op without one); set
	// it before Run to capture spans (tests). Close flushes it.
	Tracing *telemetry.Tracing

	// WebhookMux and AdminMux receive the routes of the two HTTPS
	// listeners. They exist before Run so tests can add routes of their own.
	WebhookMux *http.ServeMux
	AdminMux   *http.ServeMux

	// Pool serves queries, through PgBouncer when --database-direct-url
	// is set apart; DirectPool serves sessions (LISTEN, partition
	// maintenance) and is Pool itself otherwise.
	Pool       *pgxpool.Pool
	DirectPool *pgxpool.Pool
	Listener   *pgnotify.Listener
	TLS        *tlsutil.FileSource
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
	// Limits enforces the tenants' evaluation limits on the webhook;
	// LimitStore keeps their overrides.
	Limits     *limits.Limiter
	LimitStore *limits.Store
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
	webhookGate, adminGate           *coldGate
	webhookSrv, adminSrv, metricsSrv *http.Server
	dbReached                        atomic.Bool
	draining                         atomic.Bool // set by Drain: /readyz fails
	gc                               *gctune.Tuner
	lane                             *limits.Lane
	cacheBytes                       int64 // the policy cache's bound (memory.go)
	pools                            *database.Pools
	cancel                           context.CancelFunc
	wg                               sync.WaitGroup
}

// addReadyChecks registers the checks /readyz runs from the start; the
// components add theirs as they are wired.
func (m *Main) addReadyChecks() {
	m.Health.AddReadyCheck("shutdown", m.drainCheck)
	m.Health.AddReadyCheck("database", func(context.Context) error {
		if !m.dbReached.Load() {
			return errors.New("database not reached yet")
		}
		return nil
	})
	m.Health.AddReadyCheck("serving", m.servingCheck)
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
// While it waits, the webhook and admin listeners answer every request
// with 503 and Retry-After. It returns once the gateway serves; Close
// stops it.
func (m *Main) Run(ctx context.Context) error {
	if err := m.Config.Validate(); err != nil {
		return err
	}
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(m.Config.LogLevel))
	out := m.LogOutput
	if out == nil {
		out = os.Stderr
	}
	m.Logger = slog.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: lvl}))
	m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfoCollector())
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
	memLimit := applyMemoryHeadroom(m.Config.MemoryHeadroom)
	m.cacheBytes = policyCacheBytes(m.Config.PolicyCacheBytes, memLimit)
	if memLimit != math.MaxInt64 {
		m.Logger.Info("memory limit", "goMemLimit", memLimit, "policyCacheBytes", m.cacheBytes)
	}

	if err := m.setupTLS(); err != nil {
		return err
	}
	if err := m.setupClientCA(); err != nil {
		return err
	}
	m.wg.Add(1)
	go func() { defer m.wg.Done(); m.TLS.Watch(bg) }()

	if err := m.listen(); err != nil {
		return err
	}

	// Health first, so /livez answers and /readyz says why it is not
	// ready while the database is awaited.
	m.addReadyChecks()
	if err := m.serveOps(); err != nil {
		return err
	}
	// The webhook and admin listeners answer 503 until everything below
	// is wired (see coldGate).
	m.serveHTTPS()

	if err := m.openDatabase(ctx); err != nil {
		return err
	}
	m.Registry.MustRegister(database.NewPoolCollector("main", m.Pool))
	m.Listener = pgnotify.New(m.DirectPool, m.Logger)
	if m.DirectPool != m.Pool {
		m.Registry.MustRegister(database.NewPoolCollector("direct", m.DirectPool))
		// Subscribers resync through the pool: after an outage, wait for
		// PgBouncer to reach PostgreSQL again too.
		m.Listener.WaitFor(m.Pool.Ping)
	}

	// Components are wired here: they subscribe to m.Listener before it runs
	// and add routes to the muxes before the listeners serve.
	m.setupTenancy(ctx, bg)
	if err := m.setupPolicies(bg); err != nil {
		return err
	}
	m.setupLimits(ctx)
	if err := m.setupDecisions(bg); err != nil {
		return err
	}
	if err := m.setupWebhook(); err != nil {
		return err
	}
	if err := m.setupAdminAPI(); err != nil {
		return err
	}

	m.wg.Add(1)
	go func() { defer m.wg.Done(); _ = m.Listener.Run(bg) }()

	m.webhookGate.open()
	m.adminGate.open()

	m.Logger.Info("gateway serving",
		"webhook", m.WebhookURL(), "admin", m.AdminURL(), "metrics", m.MetricsURL(), "ca_file", m.CAFile)
	return nil
}
