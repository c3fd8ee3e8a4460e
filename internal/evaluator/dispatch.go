package evaluator

import (
	"context"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The dispatch mirrors the apiserver's generic policy dispatcher
// (k8s.io/apiserver/pkg/admission/plugin/policy/generic), which validating
// and mutating policies share: it matches each policy's matchConstraints
// and each binding's matchResources, collects the binding's params
// (parameterNotFoundAction), turns configuration errors into failurePolicy
// decisions, and for each (policy, binding, param) invocation checks the
// deadline and the namespace object, applies the policy's compile error and
// evaluates its matchConditions, with its variables. What a policy kind
// does with an invocation that passes is behind policyKind.
//
// Unlike the plugin it evaluates each invocation as it finds it, in policy
// and binding name order, rather than collecting them first; the answers
// are the same.

// policyKind is what one kind of admission policy does with an invocation
// the shared dispatch found relevant. For ValidatingAdmissionPolicy it is
// the validator: validations, audit annotations and validationActions.
type policyKind interface {
	// evaluate runs the kind's expressions for an invocation whose shared
	// steps passed: in time, namespace known, compiled, matchConditions
	// true. A failure it returns makes the failurePolicy decide.
	evaluate(inv invocation) failure
	// record records the invocation's result: its BindingResult (from
	// inv.newResult), appended to the request's Result, and whatever else
	// it adds there. inv.failure, when set, replaces what evaluate found:
	// the failurePolicy decides.
	record(inv invocation)
	// endPolicy is called once all the bindings of a matched policy are
	// dispatched.
	endPolicy(cp *compiledPolicy)
	// prepare is called before the matchConditions of an invocation whose
	// policy compiled; the mutating kind sets the object they see there.
	// It takes the policy, not the invocation, which a pointer through
	// this interface would move to the heap.
	prepare(cp *compiledPolicy)
}

// invocation is one (policy, binding, param) in the context of a request,
// as the plugin's PolicyInvocation. It is small and handed to the kind by
// value, so that it stays on the stack.
type invocation struct {
	policy  *compiledPolicy
	binding *compiledBinding
	param   *param
	// namespace is the namespace object, nil for a cluster-scoped request.
	namespace *corev1.Namespace
	trace     *bindingTracer
	// converted is set when the policy matched the resource the webhook
	// received rather than the original request's (matchPolicy
	// Equivalent); see matched.
	converted bool
	// notMatched is set when a matchCondition is false, or errs under
	// failurePolicy Ignore.
	notMatched bool
	failure    failure
}

// failure is an error that makes the failurePolicy decide an invocation.
type failure struct {
	cause   Cause // CauseNone when there is no failure
	message string
}

// newResult is the invocation's BindingResult before its outcome.
func (inv *invocation) newResult() BindingResult {
	br := BindingResult{Policy: inv.policy.name, Binding: inv.binding.name, Actions: inv.binding.actions}
	if inv.param != nil {
		br.Param = inv.param.key()
	}
	return br
}

// matched is the resource and kind the invocation's policy matched: the
// original request's, or, when converted, what the webhook received.
func (rc *reqCtx) matched(inv *invocation) (schema.GroupVersionResource, schema.GroupVersionKind) {
	if inv.converted {
		return rc.req.Resource, rc.req.Kind
	}
	return rc.req.RequestResource, rc.req.RequestKind
}

// fail sets the invocation's failure, replacing an earlier one.
func (inv *invocation) fail(cause Cause, message string) {
	inv.failure = failure{cause: cause, message: message}
}

// dispatcher is the shared dispatch of one evaluation of a request.
type dispatcher struct {
	reqCtx
	kind policyKind
	res  *Result // the answer being built
}

// admissionConfigResources are never evaluated by API-defined policies
// (generic.Plugin.isExcludedFromAPIHooks).
var admissionConfigResources = map[schema.GroupResource]bool{
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"}:       true,
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings"}: true,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicies"}:         true,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicybindings"}:   true,
}

// candidates are the positions in s.hooks of the policies that may match
// the request: all of them when tracing, so that the trace explains why
// the others do not.
func (s *Snapshot) candidates(r *Request, all bool) []int {
	return candidatesIn(s.hooks, s.index, r, all)
}

func candidatesIn(hooks []*compiledPolicy, index *ruleIndex, r *Request, all bool) []int {
	switch {
	case all:
		candidates := make([]int, len(hooks))
		for i := range candidates {
			candidates[i] = i
		}
		return candidates
	case r.Resource != r.RequestResource:
		return index.lookup(r.Operation, r.RequestResource, r.Resource)
	}
	return index.lookup(r.Operation, r.RequestResource)
}

// run dispatches the request to the candidate policies of hooks, in
// order; it stops early when the evaluation must be redone exactly.
func (d *dispatcher) run(hooks []*compiledPolicy, candidates []int) {
	for _, pi := range candidates {
		d.dispatchPolicy(hooks[pi])
		if d.redo {
			return
		}
	}
}

// dispatchPolicy mirrors one iteration of the plugin dispatcher's loop
// over hooks.
func (d *dispatcher) dispatchPolicy(cp *compiledPolicy) {
	pt := newTracer(d.res, d.tracing).policy(cp.name)
	if cp.constraintsErr != nil {
		pt.unmatched(cp.constraintsErr.Error())
		d.configError(cp, nil, cp.constraintsErr)
		return
	}
	matches, gvr, gvk, err := cp.match.matches(&d.reqCtx)
	if err != nil {
		pt.unmatched(err.Error())
		d.configError(cp, nil, err)
		return
	}
	if !matches {
		pt.unmatched("matchConstraints do not match the request")
		return
	}
	pt.matched()
	// A match is on the request's resource and kind, or on the equivalent
	// ones the webhook received (compiledMatch.matches).
	converted := gvr != d.req.RequestResource
	for _, cb := range cp.bindings {
		d.dispatchBinding(cp, cb, gvk, converted, pt)
	}
	d.kind.endPolicy(cp)
}

// dispatchBinding matches one binding of a matched policy, collects its
// params and invokes the policy once per param.
func (d *dispatcher) dispatchBinding(cp *compiledPolicy, cb *compiledBinding, gvk schema.GroupVersionKind, converted bool, pt *policyTracer) {
	bt := pt.binding(cb.name)
	if cb.clusterSkips(d.req) {
		bt.skipped(fmt.Sprintf("the cluster's labels do not match the binding's %s %q", ClusterSelectorAnnotation, cb.clusterSel.String()))
		bt.clusterSkipped()
		d.res.Bindings = append(d.res.Bindings, BindingResult{Policy: cp.name, Binding: cb.name, Actions: cb.actions, Outcome: OutcomeClusterSkipped})
		return
	}
	if cb.matchErr != nil {
		bt.failed(cb.matchErr)
		d.configError(cp, cb, cb.matchErr)
		return
	}
	if cb.match != nil {
		m, _, _, err := cb.match.matches(&d.reqCtx)
		if err != nil {
			bt.failed(err)
			d.configError(cp, cb, err)
			return
		}
		if !m {
			bt.skipped("matchResources do not match the request")
			return
		}
	}
	bt.matched()
	params, err := d.s.collectParams(cp, cb, d.req.Namespace)
	if err != nil {
		bt.failed(err)
		d.configError(cp, cb, err)
		return
	}
	if len(params) > 0 && !d.viewAs(gvk) {
		err := fmt.Errorf("failed to convert object version: %w",
			fmt.Errorf("the webhook received the object as %v, not as %v", d.req.Kind, gvk))
		bt.failed(err)
		d.configError(cp, cb, err)
		return
	}
	if len(params) == 0 {
		bt.noParams()
		d.res.Bindings = append(d.res.Bindings, BindingResult{Policy: cp.name, Binding: cb.name, Actions: cb.actions, Outcome: OutcomeNoParams})
		return
	}
	namespace, _, nsUnknown := d.namespaceObject(cp.needsNamespace)
	for _, p := range params {
		bt = bt.forParam(pt, p)
		inv := invocation{policy: cp, binding: cb, param: p, namespace: namespace, trace: bt, converted: converted}
		d.invoke(&inv, nsUnknown)
		d.kind.record(inv)
		bt.finish(&d.res.Bindings[len(d.res.Bindings)-1])
	}
	d.viewAs(d.req.Kind)
}

// invoke runs the shared steps of one invocation, in the plugin's order,
// and the kind's own evaluation when they pass. A deadline that passes
// during the evaluation makes it a timeout, whatever it found.
func (d *dispatcher) invoke(inv *invocation, nsUnknown *unknownNamespaceError) {
	switch {
	case d.ctx.Err() != nil:
		inv.fail(CauseTimeout, deadlineMessage(d.ctx))
		return
	case nsUnknown != nil:
		d.res.UnknownNamespace = nsUnknown.name
		d.res.PendingNamespace = d.res.PendingNamespace || nsUnknown.pending
		inv.fail(CauseUnknownNamespace, nsUnknown.Error())
		return
	}
	if cp := inv.policy; cp.compileErr != nil {
		inv.fail(CauseCompileError, cp.compileErr.Error())
	} else if d.kind.prepare(cp); d.matchConditions(inv) {
		if f := d.kind.evaluate(*inv); f.cause != CauseNone {
			inv.failure = f
		}
	}
	if d.ctx.Err() != nil {
		inv.fail(CauseTimeout, deadlineMessage(d.ctx))
	}
}

func deadlineMessage(ctx context.Context) string {
	return fmt.Sprintf("evaluation did not finish: %v", context.Cause(ctx))
}

// errParamNotFound is collectParams' error for a binding whose
// parameterNotFoundAction is Deny.
var errParamNotFound = errors.New("no params found for policy binding with `Deny` parameterNotFoundAction")

// configCause is the cause of an error met while matching a policy or
// binding or collecting its params.
func configCause(err error) Cause {
	var une *unknownNamespaceError
	switch {
	case errors.As(err, &une):
		return CauseUnknownNamespace
	case errors.Is(err, errParamNotFound):
		return CauseParamNotFound
	}
	return CauseConfiguration
}

// configError mirrors the plugin dispatcher's addConfigError: the error
// denies under failurePolicy Fail, whatever the binding's actions. cb is
// nil for an error of the policy itself.
func (d *dispatcher) configError(cp *compiledPolicy, cb *compiledBinding, err error) {
	var bindingName, message string
	if cb == nil {
		message = fmt.Errorf("failed to configure policy: %w", err).Error()
	} else {
		bindingName = cb.name
		message = fmt.Errorf("failed to configure binding: %w", err).Error()
	}
	br := BindingResult{Policy: cp.name, Binding: bindingName, Outcome: OutcomeError, FailurePolicyApplied: true,
		Error: err.Error(), Cause: configCause(err)}
	if cb != nil {
		br.Actions = cb.actions
	}
	var une *unknownNamespaceError
	if errors.As(err, &une) {
		d.res.UnknownNamespace = une.name
	}
	switch f := failurePolicyOf(cp); f {
	case admissionregistrationv1.Ignore:
	case admissionregistrationv1.Fail:
		br.Denied = true
		d.res.Denials = append(d.res.Denials, Denial{Policy: cp.name, Binding: bindingName, Message: message})
	default:
		br.Denied = true
		d.res.Denials = append(d.res.Denials, Denial{Policy: cp.name, Binding: bindingName,
			Message: fmt.Errorf("unrecognized failure policy: '%v'", f).Error()})
	}
	d.res.Bindings = append(d.res.Bindings, br)
}
