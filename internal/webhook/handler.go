// Package webhook is the data plane: the endpoint apiservers call. It
// authenticates the caller, decodes the AdmissionReview, takes the tenant's
// policy snapshot, evaluates, answers, learns namespaces and hands one
// decision per request to the recorder.
package webhook

import (
	"context"
	"encoding/json"
	"log/slog"
	"mime"
	"net/http"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/limits"
	"github.com/portcullis-dev/portcullis/internal/policystore"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

// Handler serves POST /t/{tenant}/validate, or /t/{tenant}/mutate when
// its Kind is evaluator.Mutating. Its dependencies are functions so that tests can supply
// plain ones.
type Handler struct {
	// Kind is the webhook the handler is: evaluator.Validating (the zero
	// value) serves /validate; evaluator.Mutating serves /mutate, evaluates
	// the MutatingAdmissionPolicies instead of the validating ones, answers
	// with their patch and learns nothing (see learn). Everything else is
	// the same code path.
	Kind evaluator.Kind
	// Authenticate returns the caller's identity or a *fault.Error.
	Authenticate func(r *http.Request) (tenancy.Identity, error)
	// Snapshot returns the tenant's compiled policies. An error with
	// code fault.Unavailable (cold and the database away) gives 503,
	// so that the apiserver's failurePolicy for the webhook decides.
	Snapshot func(ctx context.Context, tenantID int64) (*policystore.Snapshot, error)
	// Namespaces returns the cluster's inventory: its namespaces, and its
	// CRDs when the value is also an evaluator.CRDLookup. On error the
	// handler goes on with an empty inventory: every namespace is unknown,
	// and bindings that need one follow their failurePolicy.
	Namespaces func(ctx context.Context, tenantID, clusterID int64) (evaluator.NamespaceLookup, error)
	// Observe and LearnTerminating keep the namespace inventory from the
	// Namespace requests the validating webhook sees (see learn). Observe's
	// committed is a request's oldObject, what the apiserver had stored;
	// provisional is what an allowed, non-dry-run CREATE or UPDATE
	// proposes, which another admission step may still reject. Both must
	// return at once.
	Observe          func(tenantID, clusterID int64, committed, provisional *corev1.Namespace)
	LearnTerminating func(tenantID, clusterID int64, name string)
	Recorder         decisions.Recorder
	Metrics          *Metrics
	Logger           *slog.Logger
	// Tracer starts one server span per request and a child per step;
	// Propagator reads the caller's W3C traceparent. Nil means no tracing.
	Tracer     trace.Tracer
	Propagator propagation.TextMapPropagator
	// Endpoint labels the request metrics; Kind's name ("validate" or
	// "mutate") when empty.
	Endpoint string
	// Instance names this gateway replica in decisions.
	Instance string
	// MaxRequestBytes bounds the body; 8 MiB when zero.
	MaxRequestBytes int64
	// DefaultTimeout applies when the apiserver sends no ?timeout; 10s
	// (the webhook default) when zero.
	DefaultTimeout time.Duration
	// Limits bounds each tenant's requests per second, concurrent
	// evaluations and CEL cost per request; nil for none.
	Limits *limits.Limiter
	// Serves says whether this deployment answers for the tenant named in
	// the request's path; nil answers for every tenant. The others get
	// 421: a tenant moved to replicas of its own (docs/production.md).
	Serves func(tenant string) bool
}

// misdirected answers a request for a tenant this deployment does not
// answer for: 421, so that the apiserver's failurePolicy decides.
func (h *Handler) misdirected(w http.ResponseWriter, r *http.Request) {
	h.Metrics.misdirected.Inc()
	writeError(w, fault.Errorf(fault.Misdirected,
		"this gateway deployment does not answer for tenant %q (--tenants, --exclude-tenants): point the webhook at the deployment that does; the webhook's failurePolicy applies",
		tenancy.PathTenant(r)))
}

// maxTimeout is the longest an apiserver waits for a webhook
// (timeoutSeconds is at most 30): a larger ?timeout is not the
// apiserver's, and must not let a request hold an evaluation slot longer.
const maxTimeout = 30 * time.Second

// evalBudget is the apiserver's ?timeout, at most maxTimeout, minus a
// margin for the answer.
func (h *Handler) evalBudget(r *http.Request) time.Duration {
	timeout := h.DefaultTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if t, err := time.ParseDuration(r.URL.Query().Get("timeout")); err == nil && t > 0 {
		timeout = min(t, maxTimeout)
	}
	return timeout - deadlineMargin(timeout)
}

// The apiserver's timeout covers the whole round trip; the answer must be
// written and sent before it ends.
func deadlineMargin(timeout time.Duration) time.Duration {
	return max(50*time.Millisecond, timeout/10)
}

// learn keeps the inventory current from Namespace requests. The oldObject
// of any request on a namespace, allowed or not, dry run or not, is what
// the apiserver had stored: committed. The object of an allowed, non-dry-run
// CREATE or UPDATE is only proposed: a later admission step (another
// webhook, a policy in the cluster) may still reject it, so it stays
// provisional until an oldObject confirms it. A denied or dry-run request
// proposes nothing: a denied UPDATE adding an exemption label must not
// change what later requests see.
//
// Traffic authenticated only by a URL secret commits nothing: that secret
// is in the webhook configuration, a GitOps repo or an apiserver error, so
// whoever read it could forge a review whose oldObject carries an
// exemption label. Such traffic may only propose (which only tightens).
func (h *Handler) learn(id tenancy.Identity, req *evaluator.Request, allowed bool) {
	if req.Resource.Group != "" || req.Resource.Resource != "namespaces" {
		return
	}
	commits := id.CredentialType != tenancy.CredentialURL
	committed := namespaceOf(req.OldObject)
	if !commits {
		committed = nil
	}
	var provisional *corev1.Namespace
	if allowed && !req.DryRun && req.SubResource == "" && (req.Operation == "CREATE" || req.Operation == "UPDATE") {
		provisional = namespaceOf(req.Object)
	}
	if committed != nil && provisional != nil && committed.Name != provisional.Name {
		committed, provisional = nil, nil
	}
	if h.Observe != nil && (committed != nil || provisional != nil) {
		h.Observe(id.TenantID, id.ClusterID, committed, provisional)
	}
	if commits && req.Operation == "DELETE" && req.SubResource == "" && allowed && !req.DryRun && h.LearnTerminating != nil && req.Name != "" {
		h.LearnTerminating(id.TenantID, id.ClusterID, req.Name)
	}
}

// namespaceOf decodes a Namespace from a request's object; nil when there
// is none or it is not one.
func namespaceOf(obj map[string]any) *corev1.Namespace {
	if obj == nil {
		return nil
	}
	var ns corev1.Namespace
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &ns); err != nil || ns.Name == "" {
		return nil
	}
	if ns.Kind != "" && ns.Kind != "Namespace" {
		return nil
	}
	return &ns
}

// fail answers an authenticated request that could not be evaluated.
func (h *Handler) fail(w http.ResponseWriter, d *decisions.Decision, err error) {
	st := fault.Status(err)
	d.HTTPStatus, d.Code, d.Message = int(st.Code), st.Code, st.Message
	if st.Code >= 500 {
		d.Verdict = decisions.VerdictError
	} else {
		d.Verdict = decisions.VerdictRejected
	}
	writeStatus(w, st)
}

func (h *Handler) finish(ctx context.Context, d *decisions.Decision, results []evaluator.BindingResult, start time.Time) {
	d.Latency = time.Since(start)
	h.Metrics.observe(h.endpoint(), d, results)
	if h.Kind == evaluator.Mutating {
		h.Metrics.observeMutations(d.TenantName, results)
	}
	if h.Recorder != nil {
		_, step := h.startStep(ctx, "record")
		h.Recorder.Record(d)
		step.End()
	}
}

func (h *Handler) endpoint() string {
	if h.Endpoint != "" {
		return h.Endpoint
	}
	return h.Kind.String()
}

func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// writeError sends err as a Kubernetes Status, which is what an apiserver
// logs from a failed webhook call.
func writeError(w http.ResponseWriter, err error) { writeStatus(w, fault.Status(err)) }

func writeStatus(w http.ResponseWriter, st metav1.Status) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(st)
}

// newID is a UUIDv7: time-ordered, so decision ids index well.
func newID() string { return uuid.Must(uuid.NewV7()).String() }
