package evaluator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

const (
	validationFailureKey          = "validation.policy.admission.k8s.io/validation_failure"
	maxValidationFailures         = 50
	maxAuditAnnotationValueLength = 10 * 1024
)

// validator is the ValidatingAdmissionPolicy kind of the dispatch, and the
// state of one evaluation of a request: it mirrors the plugin's validator
// (validations, messageExpressions, audit annotations) and its dispatcher
// delegate (validationActions, audit annotations, warnings).
type validator struct {
	dispatcher

	// decisions and audits are the evaluated invocation's, or a failed
	// one's single decision; the buffers are reused from one invocation to
	// the next.
	decisions []decision
	audits    []auditResult

	// audit is made when a binding first has something to audit: most
	// requests have nothing, and every request pays for the validator's
	// size (see reqCtx).
	audit *auditState
}

// auditState is what the Audit action and the audit annotations collect.
type auditState struct {
	// collector holds the current policy's published audit annotations,
	// by key, in the order of collectorKeys.
	collector     map[string][]string
	collectorKeys []string
	failures      []validating.ValidationFailureValue
}

func (v *validator) auditing() *auditState {
	if v.audit == nil {
		v.audit = &auditState{}
	}
	return v.audit
}

// decision mirrors validating.PolicyDecision.
type decision struct {
	deny    bool
	evalErr bool
	message string
	reason  metav1.StatusReason
	cause   Cause // of an evalErr
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
	cause  Cause
}

// validate evaluates one request against the ValidatingAdmissionPolicies.
// When the inventory (WithNamespaces) is also a CRDLookup, a custom
// resource the apiserver converted for the webhook is presented in the
// version a policy matched, where its CRD allows (crds.go).
func (s *Snapshot) validate(ctx context.Context, req *Request, cfg *evalConfig) *Result {
	ns := cfg.ns
	r := normalizeRequest(req)
	if admissionConfigResources[r.RequestResource.GroupResource()] {
		return &Result{Allowed: true}
	}
	candidates := s.candidates(r, cfg.trace)
	v := newValidator(ctx, s, r, ns, cfg.trace, !cfg.exact)
	v.cost = newCostLimit(cfg.costLimit)
	v.run(s.hooks, candidates)
	if v.redo {
		if v.typed == nil || v.typed.err == nil {
			fastRedos.Add(1)
		}
		// A budget check on the fast interpreter's cost bounds failed: only
		// exact costs may decide that, so start again without it. Or cel-go
		// found that the object does not decode into its type, which must
		// fail every expression list (typed.go), not only cel-go's.
		v = newValidator(ctx, s, r, ns, cfg.trace, false)
		v.cost = newCostLimit(cfg.costLimit)
		v.run(s.hooks, candidates)
	}
	res := v.finish()
	res.CostLimitExceeded = v.cost != nil && v.cost.exceeded
	res.Cost = v.cost.spent()
	return res
}

func newValidator(ctx context.Context, s *Snapshot, r *Request, ns NamespaceLookup, trace, fast bool) *validator {
	v := &validator{dispatcher: dispatcher{
		reqCtx: reqCtx{ctx: ctx, s: s, req: r, nsLookup: ns, fast: fast && !trace, tracing: trace},
		res:    &Result{Allowed: true},
	}}
	v.kind = v
	return v
}

// evaluate mirrors validator.Validate after the matchConditions.
func (v *validator) evaluate(inv invocation) failure {
	request := v.requestValue(v.matched(&inv))
	nsTrimmed, nsFull := v.namespaceValues(inv.namespace)
	if v.validations(&inv, request, nsTrimmed) {
		v.auditAnnotations(&inv, request, nsFull)
	}
	return inv.failure
}

// prepare has nothing to do: the validator's matchConditions see the
// request's object.
func (v *validator) prepare(*compiledPolicy) {}

// validations evaluates the validations, then their messageExpressions
// with what is left of the budget, and decides each validation. It is
// false when the evaluation failed.
func (v *validator) validations(inv *invocation, request, ns ref.Val) bool {
	cp, vp := inv.policy, inv.policy.validating
	trace := inv.trace.validations()
	var results []exprResult
	const usual = int64(celconfig.RuntimeCELCostBudget)
	given := v.budget(usual)
	remaining := given
	if len(vp.validationExprs) > 0 {
		fr := v.newFrame(cp, inv.param, request, ns, trace)
		var err error
		results, remaining, err = fr.forInput(vp.validationExprs, remaining)
		if err != nil {
			v.charge(usual, given, -1)
			inv.fail(CauseError, err.Error())
			return false
		}
	}
	var messages []exprResult
	var msgErr error
	if len(vp.messageExprs) > 0 {
		fr := v.newFrame(cp, inv.param, request, ns, nil)
		messages, remaining, msgErr = fr.forInput(vp.messageExprs, remaining)
	}
	v.charge(usual, given, remaining)
	f := failurePolicyOf(cp)
	v.decisions = slices.Grow(v.decisions[:0], len(results))[:len(results)]
	for i := range results {
		var message *exprResult
		if len(messages) > i {
			message = &messages[i]
		}
		d := &v.decisions[i]
		*d = decide(f, &vp.validations[i], &results[i], message, msgErr)
		trace.validation(i, d)
	}
	return true
}

// decide mirrors the plugin validator's decision on one validation.
func decide(f admissionregistrationv1.FailurePolicyType, cv *compiledValidation, r, message *exprResult, msgErr error) decision {
	var d decision
	switch {
	case r.err != nil:
		d.deny, d.evalErr, d.message, d.cause = f != admissionregistrationv1.Ignore, true, r.err.Error(), r.cause
	case errors.Is(msgErr, apiservercel.ErrInternal) || errors.Is(msgErr, apiservercel.ErrOutOfBudget):
		d.deny, d.evalErr, d.message, d.cause = f != admissionregistrationv1.Ignore, true, fmt.Sprintf("failed messageExpression: %s", msgErr), CauseError
	case r.val != celtypes.True:
		d.deny = true
		if cv.reason == nil {
			d.reason = metav1.StatusReasonInvalid
		} else {
			d.reason = metav1.StatusReason(*cv.reason)
		}
		d.message = failureMessage(cv, message)
	}
	return d
}

// failureMessage is a failed validation's message: its messageExpression's
// value when usable, else its message, else the expression.
func failureMessage(cv *compiledValidation, r *exprResult) string {
	var message string
	if r != nil && r.err == nil && r.val != nil {
		if s, ok := r.val.Value().(string); ok {
			message = strings.TrimSpace(s)
			if len(message) > celconfig.MaxEvaluatedMessageExpressionSizeBytes || strings.ContainsAny(message, "\n") {
				message = ""
			}
		}
	}
	if message == "" && len(cv.message) > 0 {
		message = strings.TrimSpace(cv.message)
	}
	if message == "" {
		message = fmt.Sprintf("failed expression: %v", strings.TrimSpace(cv.expr.text))
	}
	return message
}

// auditAnnotations evaluates the audit annotations, with a budget of their
// own.
func (v *validator) auditAnnotations(inv *invocation, request, ns ref.Val) {
	cp, vp := inv.policy, inv.policy.validating
	if len(vp.audits) == 0 {
		return
	}
	trace := inv.trace.auditAnnotations()
	fr := v.newFrame(cp, inv.param, request, ns, trace)
	const usual = int64(celconfig.RuntimeCELCostBudget)
	given := v.budget(usual)
	results, remaining, err := fr.forInput(vp.auditExprs, given)
	v.charge(usual, given, remaining)
	if err != nil {
		inv.fail(CauseError, err.Error())
		return
	}
	f := failurePolicyOf(cp)
	v.audits = slices.Grow(v.audits[:0], len(results))[:len(results)]
	for i, r := range results {
		a := &v.audits[i]
		*a = auditResult{key: vp.audits[i].key}
		trace.name(i, a.key)
		if r.err != nil {
			if f == admissionregistrationv1.Ignore {
				a.action = auditExclude
			} else {
				a.action = auditError
			}
			a.err, a.cause = r.err.Error(), r.cause
			continue
		}
		switch r.val.Type() {
		case celtypes.StringType:
			value := strings.TrimSpace(r.val.Value().(string))
			if len(value) == 0 {
				a.action = auditExclude
			} else {
				a.action, a.value = auditPublish, value
			}
		case celtypes.NullType:
			a.action = auditExclude
		default:
			a.action, a.cause = auditError, CauseError
			a.err = fmt.Sprintf("valueExpression '%v' resulted in unsupported return type: %v. "+
				"Return type must be either string or null.", vp.audits[i].valueExpression, r.val.Type())
		}
	}
}

// record turns an invocation's decisions into denials, warnings and audit
// data, as the plugin's dispatcher delegate does. A failure is one
// decision that denies unless the failurePolicy is Ignore, and goes
// through the binding's validationActions like any other.
func (v *validator) record(inv invocation) {
	br := inv.newResult()
	decisions, audits := v.decisions, v.audits
	switch {
	case inv.failure.cause != CauseNone:
		v.decisions = append(v.decisions[:0], decision{deny: failurePolicyOf(inv.policy) != admissionregistrationv1.Ignore, evalErr: true,
			message: inv.failure.message, cause: inv.failure.cause})
		decisions, audits = v.decisions, nil
		br.Timeout = inv.failure.cause == CauseTimeout
		br.Outcome = OutcomePass
	case inv.notMatched:
		decisions, audits = nil, nil
		br.Outcome = OutcomeNotMatched
	default:
		br.Outcome = OutcomePass
	}
	v.applyDecisions(&inv, &br, decisions)
	v.collectAudits(&inv, &br, audits)
	v.res.Bindings = append(v.res.Bindings, br)
	v.decisions, v.audits = v.decisions[:0], v.audits[:0]
}

// applyDecisions applies the binding's validationActions to each decision
// that denies.
func (v *validator) applyDecisions(inv *invocation, br *BindingResult, decisions []decision) {
	cp, cb := inv.policy, inv.binding
	for i, d := range decisions {
		if d.evalErr {
			br.Outcome = OutcomeError
			br.FailurePolicyApplied = true
			if br.Error == "" {
				br.Error, br.Cause = d.message, d.cause
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
		for _, action := range cb.actions {
			switch action {
			case admissionregistrationv1.Deny:
				br.Denied = true
				v.res.Denials = append(v.res.Denials, Denial{Policy: cp.name, Binding: cb.name, Message: d.message, Reason: d.reason})
			case admissionregistrationv1.Audit:
				a := v.auditing()
				a.failures = append(a.failures, validating.ValidationFailureValue{
					ExpressionIndex:   i,
					Message:           d.message,
					ValidationActions: cb.actions,
					Binding:           cb.name,
					Policy:            cp.name,
				})
			case admissionregistrationv1.Warn:
				v.res.Warnings = append(v.res.Warnings, fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", cp.name, cb.name, d.message))
			}
		}
	}
}

// collectAudits collects published audit annotations for the policy, and
// denies for those that failed.
func (v *validator) collectAudits(inv *invocation, br *BindingResult, audits []auditResult) {
	cp, cb := inv.policy, inv.binding
	for _, a := range audits {
		switch a.action {
		case auditPublish:
			value := a.value
			if len(value) > maxAuditAnnotationValueLength {
				value = value[:maxAuditAnnotationValueLength]
			}
			st := v.auditing()
			if st.collector == nil {
				st.collector = map[string][]string{}
			}
			if _, ok := st.collector[a.key]; !ok {
				st.collectorKeys = append(st.collectorKeys, a.key)
			}
			if !slices.Contains(st.collector[a.key], value) {
				st.collector[a.key] = append(st.collector[a.key], value)
			}
		case auditError:
			br.Outcome = OutcomeError
			br.FailurePolicyApplied = true
			br.Denied = true
			if br.Error == "" {
				br.Error, br.Cause = a.err, a.cause
			}
			v.res.Denials = append(v.res.Denials, Denial{Policy: cp.name, Binding: cb.name, Message: a.err})
		}
	}
}

// endPolicy publishes the policy's audit annotations, keys sorted, values
// of one key joined.
func (v *validator) endPolicy(cp *compiledPolicy) {
	st := v.audit
	if st == nil || len(st.collectorKeys) == 0 {
		return
	}
	slices.Sort(st.collectorKeys)
	for _, key := range st.collectorKeys {
		values := st.collector[key]
		value := values[0]
		if len(values) > 1 {
			value = strings.Join(values, ", ")
		}
		v.res.AuditAnnotations = append(v.res.AuditAnnotations, AuditAnnotation{Key: cp.name + "/" + key, Value: value})
	}
	clear(st.collector)
	st.collectorKeys = st.collectorKeys[:0]
}

// finish adds the validation failures the Audit action collected, and the
// status of the first denial.
func (v *validator) finish() *Result {
	res := v.res
	if v.audit != nil && len(v.audit.failures) > 0 {
		failures := v.audit.failures
		if len(failures) > maxValidationFailures {
			failures = failures[:maxValidationFailures]
		}
		if b, err := utiljson.Marshal(failures); err == nil {
			res.AuditAnnotations = append(res.AuditAnnotations, AuditAnnotation{Key: validationFailureKey, Value: string(b)})
		}
	}
	if len(res.Denials) > 0 {
		res.Allowed = false
		res.Status = DenialStatus(v.req, res.Denials[0])
	}
	return res
}
