// Package webhook is the data plane: the endpoint apiservers call. It
// authenticates the caller, decodes the AdmissionReview, takes the tenant's
// policy snapshot, evaluates, answers, learns namespaces and hands one
// decision per request to the recorder.
package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/portcullis-dev/portcullis/internal/admission"
	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/limits"
	"github.com/portcullis-dev/portcullis/internal/policystore"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

// Handler serves POST /t/{tenant}/validate, or /t/{tenant}/mutate when
// Mutating is set. Its dependencies are functions so that tests can supply
// plain ones.
type Handler struct {
	// Mutating makes the handler the mutating webhook: it evaluates the
	// MutatingAdmissionPolicies (Snapshot.Mutate) instead of the
	// validating ones, answers with their patch, and learns nothing (see
	// learn). Everything else is the same code path.
	Mutating bool
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
	// Endpoint labels the request metrics; "validate", or "mutate" when
	// Mutating, when empty.
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

// readBody reads the whole body. The apiserver sends Content-Length, so
// the buffer is allocated once at its size: io.ReadAll's doublings from 512
// bytes allocated about 2.5 times the body, a fifth of all a request
// allocated, and every allocated byte is later work for the collector.
// Before any byte has arrived, a declared length is trusted only up to
// presizeMax: a stream that declares a large body and sends nothing must
// not hold much memory.
func readBody(r io.Reader, declared int64) ([]byte, error) {
	if declared <= 0 {
		return io.ReadAll(r)
	}
	// One byte more than declared, so that reaching the end takes no growth.
	buf := make([]byte, 0, min(declared, presizeMax)+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// presizeMax is far above a typical review (a Pod is 5-10 KB) and far
// below --max-request-bytes.
const presizeMax = 64 << 10

// The apiserver's timeout covers the whole round trip; the answer must be
// written and sent before it ends.
func deadlineMargin(timeout time.Duration) time.Duration {
	return max(50*time.Millisecond, timeout/10)
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	d := &decisions.Decision{ID: newID(), Time: start.UTC(), Instance: h.Instance, Endpoint: decisions.EndpointValidate}
	if h.Mutating {
		d.Endpoint = decisions.EndpointMutate
	}
	authenticated := false
	answered := false // the status line of the answer is written
	// results are the evaluator's, for the metrics: the decision keeps
	// only what the recorder stores.
	var results []evaluator.BindingResult
	spanCtx, span := h.startRequestSpan(r)
	// One deferred function, so a panic still yields exactly one decision.
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				endRequestSpan(span, d)
				panic(p)
			}
			h.Metrics.panics.Inc()
			h.Logger.Error("panic while handling an admission request", "panic", fmt.Sprint(p), "stack", string(debug.Stack()), "uid", d.UID, "answered", answered)
			// After the answer, an error body would only corrupt it; the
			// decision keeps what the apiserver was told.
			if !answered {
				h.fail(w, d, fault.Errorf(fault.Internal, "internal error while evaluating the request; it was logged"))
			}
		}
		if authenticated {
			h.finish(spanCtx, d, results, start)
		}
		endRequestSpan(span, d)
	}()

	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, fault.Errorf(fault.MethodNotAllowed, "method %s not allowed: send the AdmissionReview with POST", r.Method))
		return
	}
	if h.Serves != nil && !h.Serves(tenancy.PathTenant(r)) {
		// Before authentication: misdirected traffic costs no password
		// hash, and the answer is the same whether the tenant exists.
		h.misdirected(w, r)
		return
	}
	_, step := h.startStep(spanCtx, "authenticate")
	id, err := h.Authenticate(r)
	endStep(step, err)
	if err != nil {
		var fe *fault.Error
		if errors.As(err, &fe) {
			h.Metrics.authFailures.WithLabelValues(fe.Reason).Inc()
			if fe.Code == fault.TooManyRequests || fe.Code == fault.Unavailable {
				// A full basic-auth queue, or credentials not loaded yet.
				w.Header().Set("Retry-After", "1")
			}
		} else {
			err = fault.Wrap(err, fault.Internal, "authentication failed")
		}
		// Status sends the Message; the Reason, which could tell an
		// attacker why a credential failed, stays in the metric.
		writeError(w, err)
		return
	}
	d.TenantID, d.TenantName, d.ClusterID, d.ClusterName = id.TenantID, id.TenantName, id.ClusterID, id.ClusterName
	authenticated = true
	if h.Limits != nil {
		// Before the body is even read: a tenant over its rate costs
		// the replica as little as possible.
		if wait, which, err := h.Limits.Admit(id.TenantID, id.ClusterID); err != nil {
			h.refuse(w, d, which, wait, err)
			return
		}
	}

	if ct := r.Header.Get("Content-Type"); !isJSON(ct) {
		h.fail(w, d, fault.Errorf(fault.UnsupportedMediaType, "Content-Type %q is not supported: send application/json", ct))
		return
	}
	limit := h.MaxRequestBytes
	if limit <= 0 {
		limit = 8 << 20
	}
	_, step = h.startStep(spanCtx, "decode")
	var body []byte
	if r.ContentLength > limit {
		// Refused before reading: the same answer the limited reader gives.
		err = &http.MaxBytesError{Limit: limit}
	} else {
		body, err = readBody(http.MaxBytesReader(w, r.Body, limit), r.ContentLength)
	}
	if err != nil {
		endStep(step, err)
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.fail(w, d, fault.Errorf(fault.TooLarge, "the request body is larger than %d bytes", limit))
			return
		}
		h.fail(w, d, fault.Errorf(fault.BadRequest, "reading the request body: %v", err))
		return
	}
	rev, err := admission.Decode(body)
	endStep(step, err)
	if err != nil {
		h.fail(w, d, err) // a BadRequest that says what is wrong
		return
	}
	req := rev.Request
	fillRequest(d, req)
	req.ClusterLabels = id.ClusterLabels

	ctx, cancel := context.WithTimeout(spanCtx, h.evalBudget(r))
	defer cancel()
	stepCtx, step := h.startStep(ctx, "snapshot")
	snap, err := h.Snapshot(stepCtx, id.TenantID)
	if err != nil {
		endStep(step, err)
		if fault.ErrorCode(err) == fault.Unavailable {
			h.Metrics.coldUnavailable.Inc()
			h.fail(w, d, fault.Errorf(fault.Unavailable, "the policies of this tenant are not loaded on this replica and the policy database is unreachable; the apiserver's failurePolicy for this webhook applies"))
			return
		}
		h.Logger.Error("loading the tenant's policies failed", "tenant", id.TenantName, "error", err)
		h.fail(w, d, fault.Errorf(fault.Unavailable, "the policies of this tenant could not be loaded; the apiserver's failurePolicy for this webhook applies"))
		return
	}
	d.SnapshotVersion = snap.Version

	var nss evaluator.NamespaceLookup = evaluator.NamespaceMap{}
	if h.Namespaces != nil {
		if inv, err := h.Namespaces(stepCtx, id.TenantID, id.ClusterID); err == nil && inv != nil {
			nss = inv
		}
	}
	endStep(step, nil)

	_, step = h.startStep(ctx, "evaluate")
	release, evalOpts, which, err := h.limit(ctx, id)
	if err != nil {
		endStep(step, err)
		h.refuse(w, d, which, time.Second, err)
		return
	}
	// A panic in the evaluation must not keep the tenant's slot.
	defer release()
	evalStart := time.Now()
	var res *evaluator.Result
	eval := func() int64 {
		if h.Mutating {
			res = snap.Compiled.Mutate(ctx, req, nss, evalOpts...)
		} else {
			res = snap.Compiled.Validate(ctx, req, nss, evalOpts...)
		}
		return res.Cost
	}
	if h.Limits == nil {
		eval()
	} else if err := h.Limits.Run(ctx, id.TenantID, eval); err != nil {
		release()
		endStep(step, err)
		h.refuse(w, d, limits.LimitLane, time.Second, err)
		return
	}
	release()
	h.Metrics.observeEvaluation(id.TenantName, h.endpoint(), time.Since(evalStart))
	if res.CostLimitExceeded {
		h.Metrics.limited.WithLabelValues(h.Metrics.tenantLabel(id.TenantName), limits.LimitCost).Inc()
	}
	endStep(step, nil)

	_, step = h.startStep(ctx, "encode")
	out := admission.EncodeAnswer(rev, res)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	answered = true
	_, err = w.Write(out)
	endStep(step, err)

	results = res.Bindings
	fillResult(d, res)
	if res.UnknownNamespace != "" {
		h.Metrics.unknownNamespace.WithLabelValues(h.Metrics.tenantLabel(id.TenantName), h.Metrics.clusterLabel(id.ClusterName)).Inc()
	}
	if res.PendingNamespace {
		h.Metrics.pendingNamespace.WithLabelValues(h.Metrics.tenantLabel(id.TenantName), h.Metrics.clusterLabel(id.ClusterName)).Inc()
	}
	if res.MissingCRD {
		h.Metrics.missingCRD.WithLabelValues(h.Metrics.tenantLabel(id.TenantName), h.Metrics.clusterLabel(id.ClusterName)).Inc()
	}
	// The mutating webhook sees the same requests; one of the two learns.
	if !h.Mutating {
		h.learn(id, req, res.Allowed)
	}
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
	if h.Mutating {
		h.Metrics.observeMutations(d.TenantName, results)
	}
	if h.Recorder != nil {
		_, step := h.startStep(ctx, "record")
		h.Recorder.Record(d)
		step.End()
	}
}

func (h *Handler) endpoint() string {
	switch {
	case h.Endpoint != "":
		return h.Endpoint
	case h.Mutating:
		return "mutate"
	}
	return "validate"
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
