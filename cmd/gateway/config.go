package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/portcullis-dev/portcullis/internal/api"
	"github.com/portcullis-dev/portcullis/internal/envflag"
	"github.com/portcullis-dev/portcullis/internal/inventory"
	"github.com/portcullis-dev/portcullis/internal/limits"
	"github.com/portcullis-dev/portcullis/internal/telemetry"
)

// EnvPrefix starts the environment variable of every flag.
const EnvPrefix = "PORTCULLIS_"

// Config is everything the gateway reads at start-up.
type Config struct {
	WebhookAddr     string
	AdminAddr       string
	MetricsAddr     string
	OTLPEndpoint    string // OTLP/HTTP collector for traces; empty: tracing off
	TLSCert, TLSKey string

	// The defaults of the tenants' evaluation limits (internal/limits);
	// 0 is no limit, except for concurrency, where it is half the
	// processors.
	TenantConcurrentEvaluations int
	TenantCELCostPerRequest     int64
	TenantRequestsPerSecond     float64
	// LowPriorityCost and LowPriorityWorkers size the low-priority lane
	// (limits.Lane); LowPriorityCost 0 turns it off.
	LowPriorityCost    int64
	LowPriorityWorkers int
	// Tenants and ExcludeTenants, comma-separated names, say which
	// tenants' admission requests this deployment answers; the others
	// get 421. Empty: every tenant.
	Tenants, ExcludeTenants string

	// MetricsTLS and MetricsTokenFile opt the operations listener into
	// TLS and a bearer token on /metrics.
	MetricsTLS       bool
	MetricsTokenFile string

	// ClientCACert and ClientCAKey are the CA that issues apiservers' client
	// certificates and verifies them on the webhook listener. Under --dev
	// without them, one is generated into StateDir; otherwise, without
	// them, client certificates are off (tokens and basic auth still work).
	ClientCACert, ClientCAKey string

	Dev         bool
	StateDir    string
	DatabaseURL string
	// DatabaseDirectURL reaches PostgreSQL without transaction pooling,
	// for the LISTEN connection and partition maintenance, when
	// DatabaseURL goes through PgBouncer (internal/database.Config).
	DatabaseDirectURL string
	ShutdownTimeout   time.Duration
	// ShutdownDelay is how long SIGTERM keeps serving while /readyz says
	// not ready, before the listeners close (drain.go).
	ShutdownDelay time.Duration
	// MemoryHeadroom is the percent of GOMEMLIMIT kept free of the heap
	// (memory.go).
	MemoryHeadroom int
	LogLevel       string
	MaxHeaderBytes int

	// Policy snapshot cache (internal/policystore): bounds in tenants and
	// approximate heap bytes, and the resync period that heals lost
	// notifications (at most 30 s).
	PolicyCacheTenants int
	PolicyCacheBytes   int64
	PolicyResync       time.Duration
	MaxRequestBytes    int64
	MaxApplyDocuments  int
	MetricsTenantLabel bool
	Instance           string

	// PublicWebhookURL and WebhookCABundle go into the artifacts the admin
	// API generates for clusters: how their apiservers reach the webhook
	// listener and the PEM that verifies its certificate.
	PublicWebhookURL string
	WebhookCABundle  string

	// Decision recorder (internal/decisions): how long decisions are kept,
	// the most rows per COPY, the bound of the in-memory queue, and whether
	// each decision is also logged.
	DecisionRetention time.Duration
	DecisionBatchRows int
	DecisionQueueSize int
	DecisionLog       bool
	// DecisionStore off keeps decisions out of the database (they are then
	// only logged, under DecisionLog): for benchmarks that measure what
	// storing costs, or a fleet whose log pipeline collects them.
	DecisionStore bool
	// GCMinHeap is the smallest heap goal the garbage collector works to
	// (internal/gctune); 0 leaves Go's default.
	GCMinHeap int64

	// ProvisionalNamespaceTTL drops a provisional namespace (internal/
	// inventory) that nothing proposed again or confirmed for this long.
	ProvisionalNamespaceTTL time.Duration
	// MaxNamespacesPerCluster and MaxCRDsPerCluster are the default bounds
	// of one cluster's inventory (inventory.Store.SetDefaultBounds), for
	// tenants without an override; in the overrides' ranges.
	MaxNamespacesPerCluster int
	MaxCRDsPerCluster       int
}

// ParseConfig reads flags from args and, for flags not given, the
// PORTCULLIS_* environment (and PORTCULLIS_*_FILE), then validates.
func ParseConfig(args []string, getenv func(string) string) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.WebhookAddr, "webhook-addr", ":8443", "HTTPS listen address for apiservers' webhook calls")
	fs.StringVar(&c.AdminAddr, "admin-addr", ":9443", "HTTPS listen address for the admin API and UI")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", ":9090", "plain-HTTP listen address for /livez, /readyz and /metrics (keep it off networks that apiservers reach)")
	fs.IntVar(&c.TenantConcurrentEvaluations, "tenant-concurrent-evaluations", 0, "default of each tenant's concurrent evaluations per replica (0: half the processors, at least 1); more wait up to 1s, then get 429")
	fs.Int64Var(&c.TenantCELCostPerRequest, "tenant-cel-cost-per-request", limits.DefaultCELCostPerRequest, "default of each tenant's CEL cost per request, summed over its bindings (0: no limit)")
	fs.Float64Var(&c.TenantRequestsPerSecond, "tenant-requests-per-second", 0, "default of each tenant's requests per second per replica, more get 429 (0: no limit)")
	fs.Int64Var(&c.LowPriorityCost, "low-priority-cost", 100_000, "a tenant whose requests average more CEL cost than this evaluates on low-priority threads until its average falls below half of it (0: off)")
	fs.IntVar(&c.LowPriorityWorkers, "low-priority-workers", 0, "threads of the low-priority lane (0: half the processors, at least 1)")
	fs.StringVar(&c.Tenants, "tenants", "", "comma-separated tenant names: answer admission requests for these tenants only, the others get 421 (a deployment of a tenant's own; default: every tenant)")
	fs.StringVar(&c.ExcludeTenants, "exclude-tenants", "", "comma-separated tenant names whose admission requests get 421 here (their own deployment answers them)")
	fs.BoolVar(&c.MetricsTLS, "metrics-tls", false, "serve the --metrics-addr listener over HTTPS with the gateway's certificate")
	fs.StringVar(&c.MetricsTokenFile, "metrics-token-file", "", "file holding a bearer token that /metrics then requires (/livez and /readyz stay open)")
	fs.StringVar(&c.TLSCert, "tls-cert", "", "PEM serving certificate; reloaded when the file changes")
	fs.StringVar(&c.TLSKey, "tls-key", "", "PEM key of --tls-cert")
	fs.StringVar(&c.ClientCACert, "client-ca-cert", "", "PEM CA certificate that issues and verifies apiservers' client certificates (generated under --state-dir with --dev)")
	fs.StringVar(&c.ClientCAKey, "client-ca-key", "", "PEM key of --client-ca-cert")
	fs.BoolVar(&c.Dev, "dev", false, "development mode: generate a CA and serving certificate under --state-dir when --tls-cert is not set")
	fs.StringVar(&c.StateDir, "state-dir", ".portcullis", "directory for local state (development certificates, spill files)")
	fs.StringVar(&c.DatabaseURL, "database-url", "", "PostgreSQL URL (required); may go through PgBouncer in transaction mode when --database-direct-url is set")
	fs.StringVar(&c.DatabaseDirectURL, "database-direct-url", "", "PostgreSQL URL without transaction pooling (not through PgBouncer in transaction mode), for LISTEN and partition maintenance; when set apart from --database-url, the pool's default_query_exec_mode defaults to cache_describe (default: --database-url)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long SIGTERM waits for requests in flight")
	fs.DurationVar(&c.ShutdownDelay, "shutdown-delay", 0, "how long SIGTERM keeps serving, reporting not ready on /readyz, before it closes the listeners (endpoints and load balancers stop sending meanwhile)")
	fs.IntVar(&c.MemoryHeadroom, "memory-headroom", 0, "percent of GOMEMLIMIT (e.g. the container's memory limit) kept free of the Go heap: the soft limit is lowered by it")
	fs.StringVar(&c.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.IntVar(&c.MaxHeaderBytes, "max-header-bytes", 64<<10, "largest request header block accepted")
	fs.Int64Var(&c.MaxRequestBytes, "max-request-bytes", 8<<20, "largest AdmissionReview body accepted (larger ones get 413)")
	fs.IntVar(&c.MaxApplyDocuments, "max-apply-documents", api.DefaultMaxApplyDocuments, "most objects one apply may hold (more get 413)")
	fs.BoolVar(&c.MetricsTenantLabel, "metrics-tenant-label", true, "label metrics by tenant (switch off for very large fleets)")
	fs.StringVar(&c.OTLPEndpoint, "otlp-endpoint", "", "OTLP/HTTP collector URL for traces, e.g. http://otel-collector:4318 (empty: tracing off)")
	fs.StringVar(&c.Instance, "instance", defaultInstance(), "name of this replica in decisions and logs (default: the host name)")
	fs.IntVar(&c.PolicyCacheTenants, "policy-cache-tenants", 10_000, "most tenants whose compiled policies are kept in memory (least recently used are evicted)")
	fs.Int64Var(&c.PolicyCacheBytes, "policy-cache-bytes", 0, "approximate heap bound of the compiled policy cache, in bytes (0: 40% of GOMEMLIMIT when one is set, else 4 GiB)")
	fs.StringVar(&c.PublicWebhookURL, "public-webhook-url", "", "https URL at which apiservers reach the webhook listener, for generated cluster artifacts (default: the listener's own address)")
	fs.StringVar(&c.WebhookCABundle, "webhook-ca-bundle", "", "PEM file that verifies the webhook's serving certificate, for generated cluster artifacts (default: the development CA, else --tls-cert)")
	fs.DurationVar(&c.PolicyResync, "policy-resync", 10*time.Second, "how often cached policy versions are checked against the database (at most 30s)")
	fs.DurationVar(&c.ProvisionalNamespaceTTL, "provisional-namespace-ttl", inventory.DefaultProvisionalTTL, "how long a namespace proposed by an allowed request stays provisional without being proposed again or confirmed; then it is dropped (at least 1m)")
	fs.IntVar(&c.MaxNamespacesPerCluster, "max-namespaces-per-cluster", inventory.DefaultMaxNamespaces, "default of how many namespaces (committed and provisional together) one cluster's inventory holds; every replica serving the cluster holds them in memory (a tenant's override wins)")
	fs.IntVar(&c.MaxCRDsPerCluster, "max-crds-per-cluster", inventory.DefaultMaxCRDs, "default of how many CRDs one cluster's inventory holds (a tenant's override wins)")
	fs.DurationVar(&c.DecisionRetention, "decision-retention", 30*24*time.Hour, "how long decisions are kept; older daily partitions are dropped (at least 24h)")
	fs.IntVar(&c.DecisionBatchRows, "decision-batch-rows", 1000, "most decisions written by one COPY (a batch is also written every 200ms)")
	fs.IntVar(&c.DecisionQueueSize, "decision-queue-size", 10_000, "decisions held in memory before they spill to --state-dir/decisions")
	fs.BoolVar(&c.DecisionLog, "decision-log", false, "also log each decision as a JSON line")
	fs.BoolVar(&c.DecisionStore, "decision-store", true, "store decisions in the database (false: only --decision-log keeps them)")
	fs.Int64Var(&c.GCMinHeap, "gc-min-heap", 64<<20, "smallest heap, in bytes, before the garbage collector runs again; spaces out collections on a lightly loaded heap (0: Go's default; an explicit GOGC wins)")
	if err := envflag.Parse(fs, EnvPrefix, args, getenv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, usageError{fs}
		}
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return c, c.Validate()
}

// usageError carries the flag set so main can print -h help.
type usageError struct{ fs *flag.FlagSet }

func (u usageError) Error() string { return "help requested" }

func (u usageError) Usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: gateway [flags]\n\nEvery flag can also be set as PORTCULLIS_<FLAG> (dashes as underscores), or read from the file named by PORTCULLIS_<FLAG>_FILE.\n\nFlags:")
	u.fs.SetOutput(w)
	u.fs.PrintDefaults()
}

// Validate checks the configuration and names the first bad setting.
func (c Config) Validate() error {
	for _, a := range []struct{ flag, val string }{
		{"--webhook-addr", c.WebhookAddr}, {"--admin-addr", c.AdminAddr}, {"--metrics-addr", c.MetricsAddr},
	} {
		if _, port, err := net.SplitHostPort(a.val); err != nil || port == "" {
			return fmt.Errorf("%s %q is not a host:port address", a.flag, a.val)
		}
	}
	switch {
	case (c.TLSCert == "") != (c.TLSKey == ""):
		return errors.New("--tls-cert and --tls-key must be set together")
	case (c.ClientCACert == "") != (c.ClientCAKey == ""):
		return errors.New("--client-ca-cert and --client-ca-key must be set together")
	case c.TLSCert == "" && !c.Dev:
		return errors.New("--tls-cert and --tls-key are required (or --dev to generate a development certificate)")
	case c.DatabaseURL == "":
		return errors.New("--database-url (PORTCULLIS_DATABASE_URL) is required")
	case !isPostgresURL(c.DatabaseURL):
		return errors.New("--database-url must be a postgres:// URL")
	case c.DatabaseDirectURL != "" && !isPostgresURL(c.DatabaseDirectURL):
		return errors.New("--database-direct-url must be a postgres:// URL")
	case c.ShutdownTimeout <= 0:
		return errors.New("--shutdown-timeout must be positive")
	case c.ShutdownDelay < 0:
		return errors.New("--shutdown-delay must not be negative")
	case c.MemoryHeadroom < 0 || c.MemoryHeadroom > 90:
		return errors.New("--memory-headroom must be a percent between 0 and 90")
	case c.PolicyCacheBytes < 0:
		return errors.New("--policy-cache-bytes must not be negative")
	case c.StateDir == "":
		return errors.New("--state-dir must not be empty")
	case c.MaxRequestBytes < 1024:
		return errors.New("--max-request-bytes must be at least 1024")
	case c.PublicWebhookURL != "" && !strings.HasPrefix(c.PublicWebhookURL, "https://"):
		return errors.New("--public-webhook-url must be an https:// URL")
	case c.TenantConcurrentEvaluations < 0:
		return errors.New("--tenant-concurrent-evaluations must not be negative")
	case c.TenantCELCostPerRequest < 0:
		return errors.New("--tenant-cel-cost-per-request must not be negative")
	case c.TenantRequestsPerSecond < 0:
		return errors.New("--tenant-requests-per-second must not be negative")
	case c.LowPriorityCost < 0:
		return errors.New("--low-priority-cost must not be negative")
	case c.LowPriorityWorkers < 0:
		return errors.New("--low-priority-workers must not be negative")
	case c.Tenants != "" && c.ExcludeTenants != "":
		return errors.New("--tenants and --exclude-tenants exclude each other: give the tenants a deployment answers for, or those it does not")
	case c.MaxApplyDocuments < 1:
		return errors.New("--max-apply-documents must be at least 1")
	case c.MaxHeaderBytes < 4096:
		return errors.New("--max-header-bytes must be at least 4096")
	case c.ProvisionalNamespaceTTL < time.Minute:
		return errors.New("--provisional-namespace-ttl must be at least 1m")
	case c.MaxNamespacesPerCluster < 1 || c.MaxNamespacesPerCluster > limits.MaxNamespacesPerCluster:
		return fmt.Errorf("--max-namespaces-per-cluster must be between 1 and %d", limits.MaxNamespacesPerCluster)
	case c.MaxCRDsPerCluster < 1 || c.MaxCRDsPerCluster > limits.MaxCRDsPerCluster:
		return fmt.Errorf("--max-crds-per-cluster must be between 1 and %d", limits.MaxCRDsPerCluster)
	case c.DecisionRetention < 24*time.Hour:
		return errors.New("--decision-retention must be at least 24h: decisions are kept in daily partitions")
	case c.DecisionBatchRows < 1:
		return errors.New("--decision-batch-rows must be at least 1")
	case c.DecisionQueueSize < 1:
		return errors.New("--decision-queue-size must be at least 1")
	case c.GCMinHeap < 0:
		return errors.New("--gc-min-heap must not be negative")
	}
	if c.OTLPEndpoint != "" {
		if err := telemetry.ValidateEndpoint(c.OTLPEndpoint); err != nil {
			return fmt.Errorf("--otlp-endpoint %q: %w", c.OTLPEndpoint, err)
		}
	}
	if _, err := c.serves(); err != nil {
		return err
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", c.LogLevel)
	}
	return nil
}

func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

func defaultInstance() string {
	h, err := os.Hostname()
	if err != nil {
		return "gateway"
	}
	return h
}

// tenantNames checks a comma-separated list of tenant names.
func tenantNames(flag, list string) (map[string]bool, error) {
	names := map[string]bool{}
	for _, n := range splitNames(list) {
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			return nil, fmt.Errorf("%s: %q is not a tenant name: %s", flag, n, strings.Join(errs, "; "))
		}
		names[n] = true
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s names no tenant", flag)
	}
	return names, nil
}

// splitNames splits a comma-separated list, ignoring blanks.
func splitNames(list string) []string {
	var names []string
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// serves is the webhook's filter of tenants (webhook.Handler.Serves); nil
// when the deployment answers for every tenant.
func (c Config) serves() (func(tenant string) bool, error) {
	switch {
	case c.Tenants != "":
		names, err := tenantNames("--tenants", c.Tenants)
		if err != nil {
			return nil, err
		}
		return func(t string) bool { return names[t] }, nil
	case c.ExcludeTenants != "":
		names, err := tenantNames("--exclude-tenants", c.ExcludeTenants)
		if err != nil {
			return nil, err
		}
		return func(t string) bool { return !names[t] }, nil
	}
	return nil, nil
}

// tenantLists are the names of --tenants and --exclude-tenants, for the
// policy cache's warm-up; Validate has checked them.
func (c Config) tenantLists() (only, except []string) {
	return splitNames(c.Tenants), splitNames(c.ExcludeTenants)
}
