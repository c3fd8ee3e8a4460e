package evaluator

import (
	"context"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// mutator is the MutatingAdmissionPolicy kind of the dispatch, and the
// state of one pass of a request through the policies: it mirrors the
// plugin's dispatchInvocations (k8s.io/apiserver v0.37.2
// admission/plugin/policy/mutating/dispatcher.go), with the reinvocation
// bookkeeping of its policyReinvokeContext in mutationState.
type mutator struct {
	dispatcher
	st *mutationState

	// attrs and va are the pass's admission attributes and the object
	// versioned as the webhook received it, made on first use.
	attrs admission.Attributes
	va    *admission.VersionedAttributes
	// lastVA is the plugin's lastVersionedAttr: set once any invocation
	// reached its mutations.
	lastVA bool
	// reinvoke is set on the second pass.
	reinvoke bool

	// The current invocation's outcome, read by record.
	skipped bool
	mutated bool
	errs    []failure
	// mutationCost is the CEL cost of the last mutation's expression,
	// for the trace.
	mutationCost int64
}

// invKey identifies an invocation for reinvocation, as the plugin's key.
type invKey struct{ policy, binding, param string }

// mutationState is what lasts across the two passes of one mutating evaluation:
// the object as the attributes hold it and the reinvocation context.
type mutationState struct {
	obj, old runtime.Object
	typed    bool

	previously     []invKey
	reinvokeSet    map[invKey]bool
	shouldReinvoke bool
	// statusErr is a StatusError the plugin returns as it is: it ends the
	// request, whatever the failurePolicy.
	statusErr *apierrors.StatusError

	// fast is set on the fast path (mutfast.go): obj and old are the
	// canonical JSON of the typed objects. declined is set when it gave
	// up. checked is the version of obj ServerSideApply has checked; typed1 and
	// typed2 the typed CEL views of the last two versions read that way
	// (the object and the old object).
	fast, declined bool
	checked        *unstructured.Unstructured
	typed1, typed2 *lazyTyped
}

// requireReinvoking is RequireReinvokingPreviouslyInvokedPlugins.
func (st *mutationState) requireReinvoking() {
	if len(st.previously) == 0 {
		return
	}
	if st.reinvokeSet == nil {
		st.reinvokeSet = map[invKey]bool{}
	}
	for _, k := range st.previously {
		st.reinvokeSet[k] = true
	}
	st.previously = nil
}

// mutate evaluates one request against the snapshot's
// MutatingAdmissionPolicies and returns the final object as a JSON patch.
// It runs the plugin's first pass and, when the plugin asks for it, the
// admission chain's second pass, in which the plugin re-runs the
// reinvocationPolicy IfNeeded invocations; the answer is the object after
// both. Policies run in name order, then their bindings in name order,
// then each binding's params in the order collectParams lists them.
func (s *Snapshot) mutate(ctx context.Context, req *Request, cfg *evalConfig) *Result {
	ns := cfg.ns
	r := normalizeRequest(req)
	res := &Result{Allowed: true}
	switch r.Operation {
	case admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Connect:
	default:
		return res // the plugin does not handle DELETE
	}
	if admissionConfigResources[r.RequestResource.GroupResource()] {
		return res
	}
	candidates := candidatesIn(s.mutating.hooks, s.mutating.index, r, cfg.trace)
	if len(candidates) == 0 {
		return res
	}
	if fastEligible(r) {
		st := &mutationState{}
		if st.loadFast(r) {
			if res, ok := s.mutatePasses(ctx, r, ns, st, candidates, cfg); ok {
				fastMutations.Add(1)
				return res
			}
		}
		fastMutationDeclines.Add(1)
	}
	st := &mutationState{}
	if err := st.load(r); err != nil {
		res.Allowed, res.Status = false, &err.ErrStatus
		return res
	}
	res, _ = s.mutatePasses(ctx, r, ns, st, candidates, cfg)
	return res
}

// mutatePasses runs the passes of mutate on the loaded objects; false when
// the fast path declined.
func (s *Snapshot) mutatePasses(ctx context.Context, r *Request, ns NamespaceLookup, st *mutationState, candidates []int, cfg *evalConfig) (*Result, bool) {
	res := &Result{Allowed: true}
	first := st.obj
	m := newMutator(ctx, s, r, ns, st, res, cfg.trace, false)
	// One limit for both passes: they are one request. A fast attempt
	// that declined is thrown away with the cost it spent.
	cost := newCostLimit(cfg.costLimit)
	m.cost = cost
	m.run(s.mutating.hooks, candidates)
	m.endPass()
	if st.declined {
		return nil, false
	}
	if st.statusErr == nil && len(res.Denials) == 0 && st.shouldReinvoke {
		pass2 := *r
		pass2.Object = st.unstructured(st.obj)
		m = newMutator(ctx, s, &pass2, ns, st, res, cfg.trace, true)
		m.cost = cost
		n, nt := len(res.Bindings), len(res.Trace)
		m.run(s.mutating.hooks, candidates)
		m.endPass()
		markReinvoked(res.Trace[nt:])
		res.Bindings = append(res.Bindings[:n], dropSkipped(res.Bindings[n:])...)
		if st.declined {
			return nil, false
		}
	}
	switch {
	case st.statusErr != nil:
		res.Allowed = false
		res.Status = &st.statusErr.ErrStatus
	case len(res.Denials) > 0:
		res.Allowed = false
		res.Status = m.denialStatus()
	case st.obj != first:
		res.Object, res.Patch = st.patch(r.Object, first)
	}
	res.CostLimitExceeded = cost != nil && cost.exceeded
	res.Cost = cost.spent()
	return res, true
}

func newMutator(ctx context.Context, s *Snapshot, r *Request, ns NamespaceLookup, st *mutationState, res *Result, trace, reinvoke bool) *mutator {
	m := &mutator{dispatcher: dispatcher{
		reqCtx: reqCtx{ctx: ctx, s: s, req: r, nsLookup: ns, tracing: trace, heldObjects: true},
		res:    res,
	}, st: st, reinvoke: reinvoke}
	m.kind = m
	return m
}

// dropSkipped keeps, of the second pass's results, the invocations that
// were reinvoked or failed.
func dropSkipped(brs []BindingResult) []BindingResult {
	out := brs[:0]
	for _, br := range brs {
		if br.Outcome == OutcomePass || br.Outcome == OutcomeError {
			br.Reinvoked = true
			out = append(out, br)
		}
	}
	return out
}

// versioned is the pass's VersionedAttributes, as the generic dispatcher's
// versionedAttributeAccessor makes them once per pass.
func (m *mutator) versioned() *admission.VersionedAttributes {
	if m.va == nil {
		r := m.req
		m.attrs = admission.NewAttributesRecord(m.st.obj, m.st.old, r.RequestKind, r.Namespace, r.Name, r.RequestResource,
			r.RequestSubResource, admission.Operation(r.Operation), nil, r.DryRun, userInfo(r))
		m.va = &admission.VersionedAttributes{Attributes: m.attrs, VersionedKind: r.Kind}
		m.va.VersionedObject.Set(m.st.obj)
		if m.st.old != nil {
			m.va.VersionedOldObject.Set(m.st.old)
		}
	}
	return m.va
}

// prepare mirrors the matchConditions' activation: the condition
// evaluator switches the versioned objects to their typed CEL view
// (UseSchemalessTypeRef) for the rest of the pass, then reads them.
func (m *mutator) prepare(cp *compiledPolicy) {
	if n := cp.mutating.patchers(); n != len(cp.mutating.mutations) && m.st.statusErr == nil {
		// The plugin checks this first, for every invocation of the policy.
		m.st.statusErr = apierrors.NewInternalError(fmt.Errorf("expected %v compiled evaluators for policy %v, got %v",
			len(cp.mutating.mutations), cp.name, n))
		m.redo = true
	}
	if len(cp.matchConditions) == 0 {
		return
	}
	va := m.versioned()
	//lint:ignore SA1019 the plugin's condition evaluator sets it, and mutations see the effect
	va.VersionedObject.UseSchemalessTypeRef = true
	//lint:ignore SA1019 as above
	va.VersionedOldObject.UseSchemalessTypeRef = true
	m.setObjects(va)
}

// setObjects makes the versioned objects' CEL values what the next frames
// see; variables are evaluated again, as the plugin evaluates them again
// in every activation.
func (m *mutator) setObjects(va *admission.VersionedAttributes) error {
	old, err := m.celValue(&va.VersionedOldObject)
	if err != nil {
		return fmt.Errorf("failed to prepare oldObject variable for evaluation: %w", err)
	}
	obj, err := m.celValue(&va.VersionedObject)
	if err != nil {
		return fmt.Errorf("failed to prepare object variable for evaluation: %w", err)
	}
	m.objLoaded = true
	m.objVal, m.oldVal = nil, nil
	if obj != nil {
		m.objVal = obj
	}
	if old != nil {
		m.oldVal = old
	}
	clear(m.varCache)
	return nil
}

// evaluate mirrors the body of dispatchInvocations' loop after the
// matchConditions.
func (m *mutator) evaluate(inv invocation) failure {
	m.skipped, m.mutated, m.errs = false, false, m.errs[:0]
	cp := inv.policy
	key := invKey{policy: cp.name, binding: inv.binding.name}
	if inv.param != nil {
		key.param = inv.param.key()
	}
	if m.st.statusErr != nil || m.st.declined || m.reinvoke && !m.st.reinvokeSet[key] {
		m.skipped = true
		return failure{}
	}
	gvr, gvk := m.matched(&inv)
	if gvk != m.req.Kind {
		return failure{cause: CauseConfiguration, message: fmt.Sprintf("failed to convert object version: the webhook received the object as %v, not as %v", m.req.Kind, gvk)}
	}
	va := m.versioned()
	before := va.VersionedObject.Object()
	for i := range cp.mutating.mutations {
		m.lastVA = true
		if va.VersionedObject.Object() == nil {
			continue
		}
		before := va.VersionedObject.Object()
		err := m.dispatchOne(&inv, &cp.mutating.mutations[i], va, gvr)
		if errors.Is(err, errFastDecline) {
			m.st.declined, m.redo = true, true
			return failure{}
		}
		m.traceMutation(inv.trace, i, &cp.mutating.mutations[i], before, err)
		if err == nil {
			m.mutated = true
			continue
		}
		if se, ok := asStatusError(err); ok {
			m.st.statusErr = se
			m.redo = true // stops the dispatch
			return failure{}
		}
		m.errs = append(m.errs, failure{cause: mutationCause(err), message: err.Error()})
	}
	// An object no mutation replaced is equal to itself. On the fast path
	// a replaced one counts as changed even when it is equal: what that
	// does here (ask for reinvocation) the end of the pass does anyway for
	// a dirty object, and a replaced object is dirty.
	if after := va.VersionedObject.Object(); after != before && (m.st.fast || !apiequality.Semantic.DeepEqual(before, after)) {
		m.st.requireReinvoking()
		m.st.shouldReinvoke = true
	}
	if cp.mutating.reinvocation == admissionregistrationv1.IfNeededReinvocationPolicy {
		m.st.previously = append(m.st.previously, key)
	}
	return failure{}
}

// record adds the invocation's BindingResult and its errors, which deny
// under failurePolicy Fail with the plugin's reason, Invalid.
func (m *mutator) record(inv invocation) {
	br := inv.newResult()
	errs := m.errs
	switch {
	case inv.failure.cause != CauseNone:
		errs = []failure{inv.failure}
		br.Timeout = inv.failure.cause == CauseTimeout
	case inv.notMatched:
		br.Outcome = OutcomeNotMatched
		m.res.Bindings = append(m.res.Bindings, br)
		return
	case m.skipped:
		m.res.Bindings = append(m.res.Bindings, br) // Outcome "": not run
		return
	}
	br.Outcome, br.Mutated = OutcomePass, m.mutated
	if m.st.statusErr != nil {
		br.Outcome, br.Denied, br.Cause, br.Error = OutcomeError, true, CauseError, m.st.statusErr.Error()
	}
	for _, e := range errs {
		br.Outcome = OutcomeError
		br.FailurePolicyApplied = true
		if br.Error == "" {
			br.Error, br.Cause = e.message, e.cause
		}
		if failurePolicyOf(inv.policy) != admissionregistrationv1.Ignore {
			br.Denied = true
			m.res.Denials = append(m.res.Denials, Denial{Policy: inv.policy.name, Binding: inv.binding.name,
				Message: e.message, Reason: metav1.StatusReasonInvalid})
		}
	}
	m.res.Bindings = append(m.res.Bindings, br)
}

func (m *mutator) endPolicy(*compiledPolicy) {}

// endPass mirrors the end of dispatchInvocations: a pass that patched
// (even without a change) asks for the reinvocation of every IfNeeded
// invocation so far, and its object becomes the attributes' object.
func (m *mutator) endPass() {
	if m.st.statusErr != nil || !m.lastVA || m.va == nil || m.va.VersionedObject.Object() == nil || !m.va.Dirty {
		return
	}
	m.st.requireReinvoking()
	m.st.shouldReinvoke = true
	m.st.obj = m.va.VersionedObject.Object()
}

// userInfo is the request's user as admission attributes carry it.
func userInfo(r *Request) user.Info {
	u := &user.DefaultInfo{Name: r.UserInfo.Username, UID: r.UserInfo.UID, Groups: r.UserInfo.Groups}
	if len(r.UserInfo.Extra) > 0 {
		u.Extra = make(map[string][]string, len(r.UserInfo.Extra))
		for k, v := range r.UserInfo.Extra {
			u.Extra[k] = v
		}
	}
	return u
}

// denialStatus is the generic plugin's answer to the errors left after
// the failurePolicy: admission.NewForbidden, with the first error's
// message and reason and every message as a cause. The plugin lists the
// errors of matching, bindings and params (reason unset) before those of
// the invocations (reason Invalid), whatever the policies' order.
func (m *mutator) denialStatus() *metav1.Status {
	m.versioned()
	err, ok := asStatusError(admission.NewForbidden(m.attrs, errors.New("admission request denied by policy")))
	if !ok {
		return &apierrors.NewInternalError(errors.New("failed to create status error")).ErrStatus
	}
	st := err.ErrStatus
	st.Message = ""
	denials := make([]Denial, 0, len(m.res.Denials))
	for _, d := range m.res.Denials {
		if d.Reason == "" {
			denials = append(denials, d)
		}
	}
	for _, d := range m.res.Denials {
		if d.Reason != "" {
			denials = append(denials, d)
		}
	}
	for _, d := range denials {
		var message string
		if d.Binding != "" {
			message = fmt.Sprintf("policy '%s' with binding '%s' denied request: %s", d.Policy, d.Binding, d.Message)
		} else {
			message = fmt.Sprintf("policy %q denied request: %s", d.Policy, d.Message)
		}
		if st.Message == "" {
			st.Message = message
			if d.Reason != "" {
				st.Reason = d.Reason
			}
		}
		st.Details.Causes = append(st.Details.Causes, metav1.StatusCause{Message: message})
	}
	return &st
}
