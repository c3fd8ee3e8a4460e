// Package api serves the admin REST API under /api/v1 on the admin
// listener. Routes are declared once, in a table (routes.go): the mux, the
// authorization check and the OpenAPI document are all built from it, so a
// route cannot exist without being documented and authorized. Every error is
// a Kubernetes-style Status, mapped from the stores' error codes in one place
// (errors.go).
package api

import (
	"context"
	"log/slog"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/authmiss"
	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/inventory"
	"github.com/portcullis-dev/portcullis/internal/limits"
	"github.com/portcullis-dev/portcullis/internal/policystore"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

// Server holds what the handlers need. Every field is required.
type Server struct {
	Tokens   *adminauth.Store
	Tenancy  *tenancy.Store
	Policies *policystore.Store
	// Inventory stores each cluster's inventory (its namespaces).
	Inventory *inventory.Store
	Audit     *auditlog.Store
	// Decisions reads the decisions the webhook recorded.
	Decisions *decisions.Store
	Logger    *slog.Logger
	// WebhookURL is the gateway's webhook listener as clusters reach it by
	// default, for generated artifacts; CABundle returns the PEM that
	// verifies it. A func, read whenever artifacts are made: a CA that
	// changes on disk (a renewed cert-manager CA) is in the next artifacts
	// without a restart.
	WebhookURL string
	CABundle   func() ([]byte, error)
	// Serves says whether this deployment's webhook answers for a tenant
	// (the gateway's --tenants, --exclude-tenants); nil for every tenant.
	// Artifacts for a tenant it does not answer for need the address of
	// the deployment that does: WebhookURL would be refused.
	Serves func(tenant string) bool
	// Tracer, when set, makes a server span of every call; Propagator
	// joins it to the caller's traceparent.
	Tracer     trace.Tracer
	Propagator propagation.TextMapPropagator
	// Limits stores the tenants' overrides of the evaluation limits, and
	// LimitDefaults are the gateway's defaults they override (the
	// inventory bounds excepted: Inventory.DefaultBounds gives those).
	Limits        *limits.Store
	LimitDefaults limits.Limits
	// Limiter, when set, charges the evaluations of POST .../evaluate to
	// the tenant's limits on this replica, as the webhook's requests are.
	Limiter *limits.Limiter
	// MaxBodyBytes bounds request bodies; 8 MiB when zero.
	MaxBodyBytes int64
	// MaxApplyDocuments bounds the objects of one apply;
	// DefaultMaxApplyDocuments when zero.
	MaxApplyDocuments int
	// Snapshot and Namespaces are the webhook's own sources of a tenant's
	// compiled policies and of a cluster's namespace inventory, so that
	// evaluate answers exactly what the webhook would.
	Snapshot   func(ctx context.Context, tenantID int64) (*policystore.Snapshot, error)
	Namespaces func(ctx context.Context, tenantID, clusterID int64) (evaluator.NamespaceLookup, error)
	// DecisionSearches bounds each tenant's decision searches (lists and
	// stats) running at once on this replica; DefaultDecisionSearches when
	// zero. Over it, a search is 429 with Retry-After.
	DecisionSearches int
	// UnknownTokens rate-limits lookups of admin tokens that turn out
	// unknown, per client address (package authmiss); Handler makes one
	// with the defaults when nil.
	UnknownTokens *authmiss.Limiter

	searches searchSlots
}

// Handler returns the API's routes. Requests outside them get a 404 Status,
// and a known path with another method a 405.
func (s *Server) Handler() http.Handler {
	if s.UnknownTokens == nil {
		s.UnknownTokens = authmiss.New(nil, 0, 0, 0)
	}
	mux := http.NewServeMux()
	for _, rt := range s.routes() {
		mux.Handle(rt.method+" "+rt.path, s.traced(rt.method, rt.path, s.handle(rt)))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, fault.Errorf(fault.NotFound, "no route for %s %s; GET /api/v1/openapi.json lists them", r.Method, r.URL.Path))
	})
	return mux
}
