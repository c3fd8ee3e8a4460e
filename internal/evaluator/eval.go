package evaluator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
)

const (
	validationFailureKey          = "validation.policy.admission.k8s.io/validation_failure"
	maxValidationFailures         = 50
	maxAuditAnnotationValueLength = 10 * 1024
)

// admissionConfigResources are never evaluated by API-defined policies
// (generic.Plugin.isExcludedFromAPIHooks).
var admissionConfigResources = map[schema.GroupResource]bool{
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"}:       true,
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings"}: true,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicies"}:         true,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicybindings"}:   true,
}

// fastRedos counts requests evaluated twice because the fast path's cost
// bounds ran out of budget.
var fastRedos atomic.Int64

// ExactReevaluations is the number of requests this process evaluated a
// second time without the fast path, because the per-evaluation cost
// budget, checked against the fast path's cost bounds, ran out (fast.go).
// Only requests close to the budget do; each costs twice the time.
func ExactReevaluations() int64 { return fastRedos.Load() }

// reqCtx holds what one Validate call computes at most once.
type reqCtx struct {
	ctx      context.Context
	s        *Snapshot
	req      *Request
	nsLookup NamespaceLookup
	res      *Result
	trace    bool

	labelsLoaded bool
	objLabels    map[string]string
	oldLabels    map[string]string

	nsLoaded bool
	nsKnown  bool
	ns       *corev1.Namespace
	nsLabels labels.Set

	objLoaded bool
	objVal    any
	oldVal    any

	nsValsLoaded bool
	nsTrimmedVal ref.Val
	nsFullVal    ref.Val

	requestVals []requestVal

	validationFailures []validating.ValidationFailureValue

	varCache map[varKey]varResult

	// exact turns the fast path off; redo asks for the request to be
	// evaluated again with exact set (see fast.go).
	exact    bool
	redo     bool
	fastVars map[varKey]fastVarResult
	fxs      fxStack
}

type requestVal struct {
	gvr schema.GroupVersionResource
	gvk schema.GroupVersionKind
	val ref.Val
}

func (rc *reqCtx) loadObjectLabels() {
	if rc.labelsLoaded {
		return
	}
	rc.labelsLoaded = true
	if rc.req.Object != nil {
		rc.objLabels = (&unstructured.Unstructured{Object: rc.req.Object}).GetLabels()
	}
	if rc.req.OldObject != nil {
		rc.oldLabels = (&unstructured.Unstructured{Object: rc.req.OldObject}).GetLabels()
	}
}

// namespace returns the request namespace's object from the inventory; when
// the inventory lacks it, a stand-in that knows only the name.
func (rc *reqCtx) namespace() (*corev1.Namespace, bool) {
	if rc.nsLoaded {
		return rc.ns, rc.nsKnown
	}
	rc.nsLoaded = true
	name := rc.req.Namespace
	var ns *corev1.Namespace
	if rc.nsLookup != nil {
		ns, rc.nsKnown = rc.nsLookup.Namespace(name)
		rc.nsKnown = rc.nsKnown && ns != nil
	}
	if !rc.nsKnown {
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	// kubernetes.io/metadata.name is always set on a namespace.
	if ns.Labels[metadataNameLabel] != name {
		ns = ns.DeepCopy()
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[metadataNameLabel] = name
	}
	rc.ns = ns
	rc.nsLabels = labels.Set(ns.Labels)
	return rc.ns, rc.nsKnown
}

// unknownNamespaceError is the error of a binding that needs more than the
// name of a namespace the inventory lacks.
type unknownNamespaceError struct{ name string }

func (e *unknownNamespaceError) Error() string {
	return fmt.Sprintf("namespace %q is unknown: the namespace inventory lacks it, so its labels and object cannot be evaluated", e.name)
}

// namespaceLabels mirrors namespace.Matcher.GetNamespaceLabels.
func (rc *reqCtx) namespaceLabels(nameOnly bool) (labels.Set, error) {
	req := rc.req
	if req.RequestResource.Resource == "namespaces" && req.RequestSubResource == "" &&
		(req.Operation == admissionregistrationv1.Create || req.Operation == admissionregistrationv1.Update) {
		if req.Object == nil {
			return nil, apierrors.NewInternalError(errors.New("object does not implement the Object interfaces"))
		}
		rc.loadObjectLabels()
		return labels.Set(rc.objLabels), nil
	}
	if _, known := rc.namespace(); known || nameOnly {
		if !known {
			return labels.Set{metadataNameLabel: req.Namespace}, nil
		}
		return rc.nsLabels, nil
	}
	return nil, &unknownNamespaceError{name: req.Namespace}
}

func (rc *reqCtx) objects() (any, any) {
	if !rc.objLoaded {
		rc.objLoaded = true
		a := newCachingAdapter()
		if rc.req.Object != nil {
			rc.objVal = a.NativeToValue(rc.req.Object)
		}
		if rc.req.OldObject != nil {
			rc.oldVal = a.NativeToValue(rc.req.OldObject)
		}
	}
	return rc.objVal, rc.oldVal
}

// requestValue is cel.CreateAdmissionRequest for the matched resource and
// kind, converted as the plugin converts it.
func (rc *reqCtx) requestValue(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) ref.Val {
	for _, rv := range rc.requestVals {
		if rv.gvr == gvr && rv.gvk == gvk {
			return rv.val
		}
	}
	req := rc.req
	userInfo := authenticationv1.UserInfo{
		Extra:    make(map[string]authenticationv1.ExtraValue, len(req.UserInfo.Extra)),
		Groups:   req.UserInfo.Groups,
		UID:      req.UserInfo.UID,
		Username: req.UserInfo.Username,
	}
	for k, v := range req.UserInfo.Extra {
		userInfo.Extra[k] = v
	}
	dryRun := req.DryRun
	ar := &admissionv1.AdmissionRequest{
		Kind:               metav1.GroupVersionKind{Group: gvk.Group, Kind: gvk.Kind, Version: gvk.Version},
		Resource:           metav1.GroupVersionResource{Group: gvr.Group, Resource: gvr.Resource, Version: gvr.Version},
		SubResource:        req.RequestSubResource,
		RequestKind:        &metav1.GroupVersionKind{Group: req.RequestKind.Group, Kind: req.RequestKind.Kind, Version: req.RequestKind.Version},
		RequestResource:    &metav1.GroupVersionResource{Group: req.RequestResource.Group, Resource: req.RequestResource.Resource, Version: req.RequestResource.Version},
		RequestSubResource: req.RequestSubResource,
		Name:               req.Name,
		Namespace:          req.Namespace,
		Operation:          admissionv1.Operation(req.Operation),
		UserInfo:           userInfo,
		DryRun:             &dryRun,
		Options:            req.Options,
	}
	val := common.SchemalessTypedToVal(ar)
	rc.requestVals = append(rc.requestVals, requestVal{gvr: gvr, gvk: gvk, val: val})
	return val
}

func (rc *reqCtx) namespaceValues(ns *corev1.Namespace) (trimmed, full ref.Val) {
	if ns == nil {
		return celtypes.NullValue, celtypes.NullValue
	}
	if !rc.nsValsLoaded {
		rc.nsValsLoaded = true
		rc.nsTrimmedVal = common.SchemalessTypedToVal(plugincel.CreateNamespaceObject(ns))
		rc.nsFullVal = common.SchemalessTypedToVal(ns)
	}
	return rc.nsTrimmedVal, rc.nsFullVal
}

func (rc *reqCtx) newFrame(cp *compiledPolicy, p *param, request ref.Val, namespace ref.Val, trace *[]ExpressionTrace) *frame {
	obj, old := rc.objects()
	if rc.varCache == nil {
		rc.varCache = make(map[varKey]varResult, 8)
	}
	f := &frame{ctx: rc.ctx, trace: trace, cache: rc.varCache, policy: cp.index, param: p,
		rc: rc, cp: cp, fast: !rc.exact && !rc.trace}
	f.act.object = obj
	f.act.oldObject = old
	if p != nil {
		f.act.params = p.val
	}
	f.act.request = request
	f.act.namespace = namespace
	if !f.fast {
		f.bindVariables(cp)
	} // else bound on the first cel-go evaluation (celActivation)
	return f
}

// decision mirrors validating.PolicyDecision.
type decision struct {
	deny    bool
	evalErr bool
	message string
	reason  metav1.StatusReason
}

type auditAction uint8

const (
	auditExclude auditAction = iota
	auditPublish
	auditError
)

type auditResult struct {
	key    string
	value  string
	action auditAction
	err    string
}

type validateResult struct {
	decisions  []decision
	audits     []auditResult
	notMatched bool
	timeout    bool
}

func failurePolicyOf(cp *compiledPolicy) admissionregistrationv1.FailurePolicyType {
	if cp.failurePolicy == nil {
		return admissionregistrationv1.Fail
	}
	return *cp.failurePolicy
}

func errorDecision(f admissionregistrationv1.FailurePolicyType, msg string) validateResult {
	return validateResult{decisions: []decision{{deny: f != admissionregistrationv1.Ignore, evalErr: true, message: msg}}}
}

// validate mirrors validator.Validate for one (binding, param).
func (rc *reqCtx) validate(cp *compiledPolicy, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, p *param, ns *corev1.Namespace, bt *BindingTrace) validateResult {
	f := failurePolicyOf(cp)
	if cp.compileErr != nil {
		return errorDecision(f, cp.compileErr.Error())
	}
	var mcTrace, vTrace, aTrace *[]ExpressionTrace
	if bt != nil {
		mcTrace, vTrace, aTrace = &bt.MatchConditions, &bt.Validations, &bt.AuditAnnotations
	}
	if len(cp.matchConditions) > 0 {
		fr := rc.newFrame(cp, p, rc.requestValue(rc.req.RequestResource, gvk), celtypes.NullValue, mcTrace)
		results, _, err := fr.forInput(cp.matchExprs, celconfig.RuntimeCELCostBudgetMatchConditions)
		if mcTrace != nil {
			for i := range *mcTrace {
				if i < len(cp.matchConditions) {
					(*mcTrace)[i].Name = cp.matchConditions[i].name
				}
			}
		}
		if err != nil {
			if f == admissionregistrationv1.Fail {
				return errorDecision(f, err.Error())
			} else if f == admissionregistrationv1.Ignore {
				return validateResult{notMatched: true}
			}
		}
		var errorList []error
		for i, r := range results {
			if r.Error != nil {
				errorList = append(errorList, r.Error)
			}
			if r.EvalResult == celtypes.False {
				if bt != nil {
					bt.Reason = fmt.Sprintf("matchCondition %q is false", cp.matchConditions[i].name)
				}
				return validateResult{notMatched: true}
			}
		}
		if len(errorList) > 0 {
			if f == admissionregistrationv1.Fail {
				return errorDecision(f, utilerrors.NewAggregate(errorList).Error())
			} else if f == admissionregistrationv1.Ignore {
				return validateResult{notMatched: true}
			}
		}
	}

	request := rc.requestValue(gvr, gvk)
	nsTrimmed, nsFull := rc.namespaceValues(ns)

	exprs, msgExprs := cp.validationExprs, cp.messageExprs
	var evalResults []plugincel.EvaluationResult
	remaining := int64(celconfig.RuntimeCELCostBudget)
	if len(exprs) > 0 {
		fr := rc.newFrame(cp, p, request, nsTrimmed, vTrace)
		var err error
		evalResults, remaining, err = fr.forInput(exprs, remaining)
		if err != nil {
			return errorDecision(f, err.Error())
		}
	}
	var messageResults []plugincel.EvaluationResult
	var msgErr error
	if len(msgExprs) > 0 {
		fr := rc.newFrame(cp, p, request, nsTrimmed, nil)
		messageResults, _, msgErr = fr.forInput(msgExprs, remaining)
	}
	out := validateResult{decisions: make([]decision, len(evalResults))}
	for i, evalResult := range evalResults {
		d := &out.decisions[i]
		v := &cp.validations[i]
		var messageResult *plugincel.EvaluationResult
		if len(messageResults) > i {
			messageResult = &messageResults[i]
		}
		switch {
		case evalResult.Error != nil:
			d.deny, d.evalErr, d.message = f != admissionregistrationv1.Ignore, true, evalResult.Error.Error()
		case errors.Is(msgErr, apiservercel.ErrInternal) || errors.Is(msgErr, apiservercel.ErrOutOfBudget):
			d.deny, d.evalErr, d.message = f != admissionregistrationv1.Ignore, true, fmt.Sprintf("failed messageExpression: %s", msgErr)
		case evalResult.EvalResult != celtypes.True:
			d.deny = true
			if v.reason == nil {
				d.reason = metav1.StatusReasonInvalid
			} else {
				d.reason = metav1.StatusReason(*v.reason)
			}
			var message string
			if messageResult != nil && messageResult.Error == nil && messageResult.EvalResult != nil {
				if s, ok := messageResult.EvalResult.Value().(string); ok {
					message = strings.TrimSpace(s)
					if len(message) > celconfig.MaxEvaluatedMessageExpressionSizeBytes || strings.ContainsAny(message, "\n") {
						message = ""
					}
				}
			}
			if message == "" && len(v.message) > 0 {
				message = strings.TrimSpace(v.message)
			}
			if message == "" {
				message = fmt.Sprintf("failed expression: %v", strings.TrimSpace(v.expr.text))
			}
			d.message = message
		}
		if vTrace != nil && i < len(*vTrace) {
			(*vTrace)[i].Name = fmt.Sprint(i)
			if d.deny && !d.evalErr {
				(*vTrace)[i].Message = d.message
			}
		}
	}

	if len(cp.audits) > 0 {
		fr := rc.newFrame(cp, p, request, nsFull, aTrace)
		auditResults, _, err := fr.forInput(cp.auditExprs, celconfig.RuntimeCELCostBudget)
		if err != nil {
			return errorDecision(f, err.Error())
		}
		out.audits = make([]auditResult, len(auditResults))
		for i, r := range auditResults {
			a := &out.audits[i]
			a.key = cp.audits[i].key
			if aTrace != nil && i < len(*aTrace) {
				(*aTrace)[i].Name = a.key
			}
			if r.Error != nil {
				if f == admissionregistrationv1.Ignore {
					a.action = auditExclude
				} else {
					a.action = auditError
				}
				a.err = r.Error.Error()
				continue
			}
			switch r.EvalResult.Type() {
			case celtypes.StringType:
				value := strings.TrimSpace(r.EvalResult.Value().(string))
				if len(value) == 0 {
					a.action = auditExclude
				} else {
					a.action, a.value = auditPublish, value
				}
			case celtypes.NullType:
				a.action = auditExclude
			default:
				a.action = auditError
				a.err = fmt.Sprintf("valueExpression '%v' resulted in unsupported return type: %v. "+
					"Return type must be either string or null.", cp.audits[i].valueExpression, r.EvalResult.Type())
			}
		}
	}
	return out
}

// Validate evaluates one request against the snapshot. ns may be nil, in
// which case every namespace is unknown. Cancelling ctx (or its deadline)
// interrupts CEL evaluation; each unfinished binding then follows its
// failurePolicy and its BindingResult says Timeout.
func (s *Snapshot) Validate(ctx context.Context, req *Request, ns NamespaceLookup, opts ...ValidateOption) *Result {
	var cfg validateConfig
	for _, o := range opts {
		o(&cfg)
	}
	r := normalizeRequest(req)
	res := &Result{Allowed: true}
	rc := &reqCtx{ctx: ctx, s: s, req: r, nsLookup: ns, res: res, trace: cfg.trace, exact: cfg.exact}

	if admissionConfigResources[r.RequestResource.GroupResource()] {
		return res
	}

	var candidates []int
	if cfg.trace {
		candidates = make([]int, len(s.hooks))
		for i := range candidates {
			candidates[i] = i
		}
	} else if r.Resource != r.RequestResource {
		candidates = s.index.lookup(r.Operation, r.RequestResource, r.Resource)
	} else {
		candidates = s.index.lookup(r.Operation, r.RequestResource)
	}

	for _, pi := range candidates {
		rc.dispatchPolicy(s.hooks[pi])
		if rc.redo {
			break
		}
	}
	if rc.redo {
		fastRedos.Add(1)
		// A budget check on the fast path's cost bounds failed: only exact
		// costs may decide that, so start again without the fast path.
		res = &Result{Allowed: true}
		rc = &reqCtx{ctx: ctx, s: s, req: r, nsLookup: ns, res: res, trace: cfg.trace, exact: true}
		for _, pi := range candidates {
			rc.dispatchPolicy(s.hooks[pi])
		}
	}

	if len(rc.validationFailures) > 0 {
		failures := rc.validationFailures
		if len(failures) > maxValidationFailures {
			failures = failures[:maxValidationFailures]
		}
		if b, err := utiljson.Marshal(failures); err == nil {
			res.AuditAnnotations = append(res.AuditAnnotations, AuditAnnotation{Key: validationFailureKey, Value: string(b)})
		}
	}
	if len(res.Denials) > 0 {
		res.Allowed = false
		res.Status = DenialStatus(r, res.Denials[0])
	}
	return res
}

func normalizeRequest(req *Request) *Request {
	r := *req
	if r.RequestKind.Empty() {
		r.RequestKind = r.Kind
	}
	if r.RequestResource.Empty() {
		r.RequestResource = r.Resource
		if r.RequestSubResource == "" {
			r.RequestSubResource = r.SubResource
		}
	}
	if r.Kind.Empty() {
		r.Kind = r.RequestKind
	}
	if r.Resource.Empty() {
		r.Resource = r.RequestResource
		if r.SubResource == "" {
			r.SubResource = r.RequestSubResource
		}
	}
	return &r
}

// addConfigError mirrors the plugin dispatcher's addConfigError.
func (rc *reqCtx) addConfigError(err error, cp *compiledPolicy, cb *compiledBinding, br *BindingResult) {
	var bindingName string
	var message string
	if cb == nil {
		message = fmt.Errorf("failed to configure policy: %w", err).Error()
	} else {
		bindingName = cb.name
		message = fmt.Errorf("failed to configure binding: %w", err).Error()
	}
	if br == nil {
		br = &BindingResult{Policy: cp.name, Binding: bindingName}
		if cb != nil {
			br.Actions = cb.actions
		}
	}
	br.Outcome = OutcomeError
	br.FailurePolicyApplied = true
	br.Error = err.Error()
	var une *unknownNamespaceError
	if errors.As(err, &une) {
		rc.res.UnknownNamespace = une.name
	}
	switch f := failurePolicyOf(cp); f {
	case admissionregistrationv1.Ignore:
	case admissionregistrationv1.Fail:
		br.Denied = true
		rc.res.Denials = append(rc.res.Denials, Denial{Policy: cp.name, Binding: bindingName, Message: message})
	default:
		br.Denied = true
		rc.res.Denials = append(rc.res.Denials, Denial{Policy: cp.name, Binding: bindingName,
			Message: fmt.Errorf("unrecognized failure policy: '%v'", f).Error()})
	}
	rc.res.Bindings = append(rc.res.Bindings, *br)
}

// dispatchPolicy mirrors one iteration of the plugin dispatcher's loop
// over hooks.
func (rc *reqCtx) dispatchPolicy(cp *compiledPolicy) {
	var pt *PolicyTrace
	if rc.trace {
		rc.res.Trace = append(rc.res.Trace, PolicyTrace{Policy: cp.name})
		pt = &rc.res.Trace[len(rc.res.Trace)-1]
	}
	if cp.constraintsErr != nil {
		if pt != nil {
			pt.Reason = cp.constraintsErr.Error()
		}
		rc.addConfigError(cp.constraintsErr, cp, nil, nil)
		return
	}
	matches, gvr, gvk, err := cp.match.matches(rc)
	if err != nil {
		if pt != nil {
			pt.Reason = err.Error()
		}
		rc.addConfigError(err, cp, nil, nil)
		return
	}
	if !matches {
		if pt != nil {
			pt.Reason = "matchConstraints do not match the request"
		}
		return
	}
	if pt != nil {
		pt.Matched = true
	}
	var collector map[string][]string
	var collectorKeys []string
	req := rc.req
	for _, cb := range cp.bindings {
		var bt *BindingTrace
		if pt != nil {
			pt.Bindings = append(pt.Bindings, BindingTrace{Binding: cb.name})
			bt = &pt.Bindings[len(pt.Bindings)-1]
		}
		if cb.matchErr != nil {
			if bt != nil {
				bt.Reason, bt.Outcome = cb.matchErr.Error(), OutcomeError
			}
			rc.addConfigError(cb.matchErr, cp, cb, nil)
			continue
		}
		if cb.match != nil {
			m, _, _, err := cb.match.matches(rc)
			if err != nil {
				if bt != nil {
					bt.Reason, bt.Outcome = err.Error(), OutcomeError
				}
				rc.addConfigError(err, cp, cb, nil)
				continue
			}
			if !m {
				if bt != nil {
					bt.Reason = "matchResources do not match the request"
				}
				continue
			}
		}
		if bt != nil {
			bt.Matched = true
		}
		params, err := rc.s.collectParams(cp, cb, req.Namespace)
		if err != nil {
			if bt != nil {
				bt.Reason, bt.Outcome = err.Error(), OutcomeError
			}
			rc.addConfigError(err, cp, cb, nil)
			continue
		}
		if len(params) > 0 && gvk != req.Kind {
			err := fmt.Errorf("failed to convert object version: %w",
				fmt.Errorf("the webhook received the object as %v, not as %v", req.Kind, gvk))
			if bt != nil {
				bt.Reason, bt.Outcome = err.Error(), OutcomeError
			}
			rc.addConfigError(err, cp, cb, nil)
			continue
		}
		if len(params) == 0 {
			if bt != nil {
				bt.Outcome = OutcomeNoParams
				bt.Reason = "no param found; parameterNotFoundAction is Allow"
			}
			rc.res.Bindings = append(rc.res.Bindings, BindingResult{Policy: cp.name, Binding: cb.name, Actions: cb.actions, Outcome: OutcomeNoParams})
			continue
		}

		// The namespace object handed to CEL; none for cluster-scoped
		// requests and for a Namespace itself.
		var namespace *corev1.Namespace
		nsUnknown := false
		namespaceName := req.Namespace
		if k := req.RequestKind; k.Kind == "Namespace" && k.Version == "v1" && k.Group == "" {
			namespaceName = ""
		}
		if namespaceName != "" {
			var known bool
			namespace, known = rc.namespace()
			nsUnknown = !known && cp.needsNamespace
		}

		for _, p := range params {
			br := BindingResult{Policy: cp.name, Binding: cb.name, Actions: cb.actions}
			if p != nil {
				br.Param = p.key()
			}
			var ptrace *BindingTrace
			if bt != nil {
				if p != nil && bt.Param != "" {
					pt.Bindings = append(pt.Bindings, BindingTrace{Binding: cb.name, Matched: true})
					bt = &pt.Bindings[len(pt.Bindings)-1]
				}
				bt.Param = br.Param
				ptrace = bt
			}
			var vr validateResult
			switch {
			case rc.ctx.Err() != nil:
				vr = errorDecision(failurePolicyOf(cp), deadlineMessage(rc.ctx))
				vr.timeout = true
			case nsUnknown:
				rc.res.UnknownNamespace = namespaceName
				vr = errorDecision(failurePolicyOf(cp), (&unknownNamespaceError{name: namespaceName}).Error())
			default:
				vr = rc.validate(cp, gvr, gvk, p, namespace, ptrace)
				if rc.ctx.Err() != nil {
					vr = errorDecision(failurePolicyOf(cp), deadlineMessage(rc.ctx))
					vr.timeout = true
				}
			}
			collector, collectorKeys = rc.apply(cp, cb, vr, &br, collector, collectorKeys)
			if ptrace != nil {
				ptrace.Outcome = br.Outcome
				for _, e := range ptrace.Validations {
					ptrace.Cost += e.Cost
				}
				for _, e := range ptrace.AuditAnnotations {
					ptrace.Cost += e.Cost
				}
				if br.Error != "" {
					ptrace.Reason = br.Error
				}
			}
		}
	}
	slices.Sort(collectorKeys)
	for _, key := range collectorKeys {
		values := collector[key]
		value := values[0]
		if len(values) > 1 {
			value = strings.Join(values, ", ")
		}
		rc.res.AuditAnnotations = append(rc.res.AuditAnnotations, AuditAnnotation{Key: cp.name + "/" + key, Value: value})
	}
}

func deadlineMessage(ctx context.Context) string {
	return fmt.Sprintf("evaluation did not finish: %v", context.Cause(ctx))
}

// apply turns one validateResult into denials, warnings and audit data, as
// the plugin dispatcher does.
func (rc *reqCtx) apply(cp *compiledPolicy, cb *compiledBinding, vr validateResult, br *BindingResult,
	collector map[string][]string, keys []string) (map[string][]string, []string) {
	res := rc.res
	br.Timeout = vr.timeout
	switch {
	case vr.notMatched:
		br.Outcome = OutcomeNotMatched
	default:
		br.Outcome = OutcomePass
	}
	for i, d := range vr.decisions {
		if d.evalErr {
			br.Outcome = OutcomeError
			br.FailurePolicyApplied = true
			if br.Error == "" {
				br.Error = d.message
			}
		} else if d.deny && br.Outcome != OutcomeError {
			br.Outcome = OutcomeViolation
		}
		if !d.deny {
			continue
		}
		if !d.evalErr {
			br.Messages = append(br.Messages, d.message)
		}
		for _, action := range cb.binding.Spec.ValidationActions {
			switch action {
			case admissionregistrationv1.Deny:
				br.Denied = true
				res.Denials = append(res.Denials, Denial{Policy: cp.name, Binding: cb.name, Message: d.message, Reason: d.reason})
			case admissionregistrationv1.Audit:
				rc.validationFailures = append(rc.validationFailures, validating.ValidationFailureValue{
					ExpressionIndex:   i,
					Message:           d.message,
					ValidationActions: cb.binding.Spec.ValidationActions,
					Binding:           cb.name,
					Policy:            cb.binding.Spec.PolicyName,
				})
			case admissionregistrationv1.Warn:
				res.Warnings = append(res.Warnings, fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", cp.name, cb.name, d.message))
			}
		}
	}
	for _, a := range vr.audits {
		switch a.action {
		case auditPublish:
			value := a.value
			if len(value) > maxAuditAnnotationValueLength {
				value = value[:maxAuditAnnotationValueLength]
			}
			if collector == nil {
				collector = map[string][]string{}
			}
			if _, ok := collector[a.key]; !ok {
				keys = append(keys, a.key)
			}
			if !slices.Contains(collector[a.key], value) {
				collector[a.key] = append(collector[a.key], value)
			}
		case auditError:
			br.Outcome = OutcomeError
			br.FailurePolicyApplied = true
			br.Denied = true
			if br.Error == "" {
				br.Error = a.err
			}
			res.Denials = append(res.Denials, Denial{Policy: cp.name, Binding: cb.name, Message: a.err})
		}
	}
	res.Bindings = append(res.Bindings, *br)
	return collector, keys
}

// DenialStatus renders a denial as the plugin does: admission.NewForbidden
// around the policy message, with the code and reason of the validation's
// reason (422 Invalid when unset) and the message as the only cause.
func DenialStatus(req *Request, d Denial) *metav1.Status {
	r := normalizeRequest(req)
	var message string
	if d.Binding != "" {
		message = fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", d.Policy, d.Binding, d.Message)
	} else {
		message = fmt.Sprintf("ValidatingAdmissionPolicy '%s' denied request: %s", d.Policy, d.Message)
	}
	name := r.Name
	if name == "" {
		name = "Unknown"
		if r.Object != nil {
			u := &unstructured.Unstructured{Object: r.Object}
			if n := u.GetName(); n != "" {
				name = n
			} else if g := u.GetGenerateName(); g != "" {
				name = g
			}
		}
	}
	st := apierrors.NewForbidden(r.RequestResource.GroupResource(), name, errors.New(message)).ErrStatus
	reason := d.Reason
	if len(reason) == 0 {
		reason = metav1.StatusReasonInvalid
	}
	st.Reason = reason
	st.Code = reasonToCode(reason)
	st.Details.Causes = append(st.Details.Causes, metav1.StatusCause{Message: message})
	return &st
}

func reasonToCode(r metav1.StatusReason) int32 {
	switch r {
	case metav1.StatusReasonForbidden:
		return http.StatusForbidden
	case metav1.StatusReasonUnauthorized:
		return http.StatusUnauthorized
	case metav1.StatusReasonRequestEntityTooLarge:
		return http.StatusRequestEntityTooLarge
	case metav1.StatusReasonInvalid:
		return http.StatusUnprocessableEntity
	default:
		return http.StatusUnprocessableEntity
	}
}
