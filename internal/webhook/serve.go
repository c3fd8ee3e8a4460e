package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/portcullis-dev/portcullis/internal/admission"
	"github.com/portcullis-dev/portcullis/internal/answer"
	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/limits"
	"github.com/portcullis-dev/portcullis/internal/policystore"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

// exchange is one request's state across the handler's steps.
type exchange struct {
	w     http.ResponseWriter
	r     *http.Request
	start time.Time
	// ctx carries the request's span; the evaluation's budget is a child.
	ctx context.Context
	d   *decisions.Decision
	id  tenancy.Identity
	// authenticated: the request gets a decision. answered: the status
	// line of the answer is written, and nothing else may be.
	authenticated, answered bool
	// results are the evaluator's, for the metrics: the decision keeps
	// only what the recorder stores.
	results []evaluator.BindingResult
}

// ServeHTTP answers one AdmissionReview in the steps below: authenticate,
// admit (the tenant's rate), read, evaluate (the snapshot, then the
// policies under the tenant's limits), answer, and, once answered, record
// what was decided and learn from it. A step that cannot go on answers
// itself. Every authenticated request, panicking or not, hands exactly one
// decision to the recorder (conclude).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	x := &exchange{w: w, r: r, start: start,
		d: &decisions.Decision{ID: newID(), Time: start.UTC(), Instance: h.Instance, Endpoint: h.Kind.String()}}
	var span trace.Span
	x.ctx, span = h.startRequestSpan(r)
	// One deferred function, so a panic still yields exactly one decision.
	defer h.conclude(x, span)

	if !h.accepts(w, r) || !h.authenticate(x) || !h.admit(x) {
		return
	}
	rev, ok := h.read(x)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(x.ctx, h.evalBudget(r))
	defer cancel()
	snap, nss, ok := h.snapshot(ctx, x)
	if !ok {
		return
	}
	res, ok := h.evaluate(ctx, x, snap, nss, rev.Request)
	if !ok {
		return
	}
	h.answer(ctx, x, rev, res)
	h.record(x, res)
	// The mutating webhook sees the same requests; one of the two learns.
	if h.Kind == evaluator.Validating {
		h.learn(x.id, rev.Request, res.Allowed)
	}
}

// conclude ends every request: it turns a panic into a 500 when nothing
// was answered yet (an http.ErrAbortHandler goes on up), hands an
// authenticated request's decision to the recorder, and ends the span.
func (h *Handler) conclude(x *exchange, span trace.Span) {
	if p := recover(); p != nil {
		if p == http.ErrAbortHandler {
			endRequestSpan(span, x.d)
			panic(p)
		}
		h.Metrics.panics.Inc()
		h.Logger.Error("panic while handling an admission request", "panic", fmt.Sprint(p), "stack", string(debug.Stack()), "uid", x.d.UID, "answered", x.answered)
		// After the answer, an error body would only corrupt it; the
		// decision keeps what the apiserver was told.
		if !x.answered {
			h.fail(x.w, x.d, fault.Errorf(fault.Internal, "internal error while evaluating the request; it was logged"))
		}
	}
	if x.authenticated {
		h.finish(x.ctx, x.d, x.results, x.start)
	}
	endRequestSpan(span, x.d)
}

// accepts answers what is not for this handler at all: a method other
// than POST (405), or a tenant this deployment does not serve (421).
func (h *Handler) accepts(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, fault.Errorf(fault.MethodNotAllowed, "method %s not allowed: send the AdmissionReview with POST", r.Method))
		return false
	}
	if h.Serves != nil && !h.Serves(tenancy.PathTenant(r)) {
		// Before authentication: misdirected traffic costs no password
		// hash, and the answer is the same whether the tenant exists.
		h.misdirected(w, r)
		return false
	}
	return true
}

// authenticate identifies the caller, or answers 401/403 (429 or 503 with
// Retry-After when the credentials cannot be checked yet). An
// authenticated request gets a decision, whatever happens next.
func (h *Handler) authenticate(x *exchange) bool {
	_, step := h.startStep(x.ctx, "authenticate")
	id, err := h.Authenticate(x.r)
	endStep(step, err)
	if err != nil {
		var fe *fault.Error
		if errors.As(err, &fe) {
			h.Metrics.authFailures.WithLabelValues(fe.Reason).Inc()
			if fe.Code == fault.TooManyRequests || fe.Code == fault.Unavailable {
				// A full basic-auth queue, or credentials not loaded yet.
				x.w.Header().Set("Retry-After", "1")
			}
		} else {
			err = fault.Wrap(err, fault.Internal, "authentication failed")
		}
		// Status sends the Message; the Reason, which could tell an
		// attacker why a credential failed, stays in the metric.
		writeError(x.w, err)
		return false
	}
	x.id = id
	x.d.TenantID, x.d.TenantName, x.d.ClusterID, x.d.ClusterName = id.TenantID, id.TenantName, id.ClusterID, id.ClusterName
	x.authenticated = true
	return true
}

// admit counts the request against the tenant's (and its cluster's) rate,
// before the body is even read: a tenant over its rate costs the replica
// as little as possible.
func (h *Handler) admit(x *exchange) bool {
	if h.Limits == nil {
		return true
	}
	if wait, which, err := h.Limits.Admit(x.id.TenantID, x.id.ClusterID); err != nil {
		h.refuse(x.w, x.d, which, wait, err)
		return false
	}
	return true
}

// snapshot takes the tenant's compiled policies, or answers 503 so that
// the apiserver's failurePolicy for the webhook decides, and the cluster's
// inventory (an empty one when it cannot be read).
func (h *Handler) snapshot(ctx context.Context, x *exchange) (*policystore.Snapshot, evaluator.NamespaceLookup, bool) {
	stepCtx, step := h.startStep(ctx, "snapshot")
	snap, err := h.Snapshot(stepCtx, x.id.TenantID)
	if err != nil {
		endStep(step, err)
		if fault.ErrorCode(err) == fault.Unavailable {
			h.Metrics.coldUnavailable.Inc()
			h.fail(x.w, x.d, fault.Errorf(fault.Unavailable, "the policies of this tenant are not loaded on this replica and the policy database is unreachable; the apiserver's failurePolicy for this webhook applies"))
			return nil, nil, false
		}
		h.Logger.Error("loading the tenant's policies failed", "tenant", x.id.TenantName, "error", err)
		h.fail(x.w, x.d, fault.Errorf(fault.Unavailable, "the policies of this tenant could not be loaded; the apiserver's failurePolicy for this webhook applies"))
		return nil, nil, false
	}
	x.d.SnapshotVersion = snap.Version
	var nss evaluator.NamespaceLookup
	if h.Namespaces != nil {
		nss, err = h.Namespaces(stepCtx, x.id.TenantID, x.id.ClusterID)
	}
	endStep(step, nil)
	return snap, answer.Inventory(nss, err), true
}

// evaluate runs the policies of the handler's kind on one of the tenant's
// evaluation slots and lanes, within its cost limit, or answers 429.
func (h *Handler) evaluate(ctx context.Context, x *exchange, snap *policystore.Snapshot, nss evaluator.NamespaceLookup,
	req *evaluator.Request) (*evaluator.Result, bool) {
	_, step := h.startStep(ctx, "evaluate")
	release, costLimit, which, err := h.limit(ctx, x.id)
	if err != nil {
		endStep(step, err)
		h.refuse(x.w, x.d, which, time.Second, err)
		return nil, false
	}
	// A panic in the evaluation must not keep the tenant's slot.
	defer release()
	evalStart := time.Now()
	var res *evaluator.Result
	eval := func() int64 {
		res = snap.Compiled.Evaluate(ctx, h.Kind, req, evaluator.WithNamespaces(nss), evaluator.WithCostLimit(costLimit))
		return res.Cost
	}
	if h.Limits == nil {
		eval()
	} else if err := h.Limits.Run(ctx, x.id.TenantID, eval); err != nil {
		release()
		endStep(step, err)
		h.refuse(x.w, x.d, limits.LimitLane, time.Second, err)
		return nil, false
	}
	release()
	h.Metrics.observeEvaluation(x.id.TenantName, h.endpoint(), time.Since(evalStart))
	if res.CostLimitExceeded {
		h.Metrics.limited.WithLabelValues(h.Metrics.tenantLabel(x.id.TenantName), limits.LimitCost).Inc()
	}
	endStep(step, nil)
	return res, true
}

// answer writes the AdmissionReview answering rev with res. Nothing may be
// written after it.
func (h *Handler) answer(ctx context.Context, x *exchange, rev *admission.Review, res *evaluator.Result) {
	_, step := h.startStep(ctx, "encode")
	out := admission.EncodeAnswer(rev, res)
	x.w.Header().Set("Content-Type", "application/json")
	x.w.WriteHeader(http.StatusOK)
	x.answered = true
	_, err := x.w.Write(out)
	endStep(step, err)
}

// record keeps the evaluation's outcome in the decision (which conclude
// hands to the recorder) and counts what it could not know.
func (h *Handler) record(x *exchange, res *evaluator.Result) {
	x.results = res.Bindings
	fillResult(x.d, res)
	tenant, cluster := x.id.TenantName, x.id.ClusterName
	if res.UnknownNamespace != "" {
		h.Metrics.unknownNamespace.WithLabelValues(h.Metrics.tenantLabel(tenant), h.Metrics.clusterLabel(cluster)).Inc()
	}
	if res.PendingNamespace {
		h.Metrics.pendingNamespace.WithLabelValues(h.Metrics.tenantLabel(tenant), h.Metrics.clusterLabel(cluster)).Inc()
	}
	if res.MissingCRD {
		h.Metrics.missingCRD.WithLabelValues(h.Metrics.tenantLabel(tenant), h.Metrics.clusterLabel(cluster)).Inc()
	}
}
