package evaluator

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Result is the outcome of one Validate call.
type Result struct {
	Allowed bool
	// Status is nil when allowed; otherwise exactly what the apiserver's
	// plugin returns (admission.NewForbidden wrapping, code/reason from the
	// validation's reason, message in details.causes).
	Status *metav1.Status
	// Warnings in the apiserver's wording and order.
	Warnings []string
	// AuditAnnotations with the plugin's keys, in a deterministic order:
	// per policy (in name order) its keys sorted, then
	// validation.policy.admission.k8s.io/validation_failure.
	AuditAnnotations []AuditAnnotation
	// Bindings has one entry per matched (policy, binding, param).
	Bindings []BindingResult
	// Denials lists every decision that denies the request, in evaluation
	// order; Status is built from the first. (The apiserver's own order of
	// policies and bindings comes from informer maps and is not stable, so
	// with several denials it may report any one of them.)
	Denials []Denial
	// UnknownNamespace is set when a binding needed a namespace that the
	// inventory lacks.
	UnknownNamespace string
	// Trace is filled only with WithTrace().
	Trace []PolicyTrace
}

// AuditAnnotation is one audit annotation key/value pair.
type AuditAnnotation struct {
	Key   string
	Value string
}

// Outcome summarises one binding evaluation.
type Outcome string

const (
	// OutcomePass: every validation held.
	OutcomePass Outcome = "Pass"
	// OutcomeViolation: at least one validation failed; the binding's
	// validationActions applied.
	OutcomeViolation Outcome = "Violation"
	// OutcomeError: an error (compile, runtime, cost, configuration,
	// namespace or deadline); the failurePolicy decided.
	OutcomeError Outcome = "Error"
	// OutcomeNotMatched: a matchCondition was false (or errored under
	// failurePolicy Ignore), so no validation ran.
	OutcomeNotMatched Outcome = "NotMatched"
	// OutcomeNoParams: no param was found and parameterNotFoundAction is
	// Allow, so no validation ran.
	OutcomeNoParams Outcome = "NoParams"
)

// Cause says what kind of error a BindingResult's Error is. It is set where
// the error is made, so that callers (metrics, decisions) need not read the
// message.
type Cause string

const (
	// CauseNone: no error.
	CauseNone Cause = ""
	// CauseTimeout: the context was cancelled or its deadline passed
	// before the binding finished.
	CauseTimeout Cause = "Timeout"
	// CauseUnknownNamespace: the binding needed more than the name of a
	// namespace the inventory lacks (its labels for a namespaceSelector,
	// or namespaceObject).
	CauseUnknownNamespace Cause = "UnknownNamespace"
	// CauseCompileError: the policy, an expression the binding evaluated
	// or a variable that expression read does not compile.
	CauseCompileError Cause = "CompileError"
	// CauseConfiguration: the policy or binding cannot be applied to the
	// request: missing matchConstraints, a bad selector or paramRef, or an
	// object the webhook received in another version than the policy
	// matched.
	CauseConfiguration Cause = "Configuration"
	// CauseParamNotFound: no param was found and parameterNotFoundAction
	// is Deny.
	CauseParamNotFound Cause = "ParamNotFound"
	// CauseError: any other error: a runtime error, the cost limit or
	// budget, an audit annotation of the wrong type.
	CauseError Cause = "Error"
)

// BindingResult describes one matched (policy, binding, param).
type BindingResult struct {
	Policy  string
	Binding string // empty for a policy-level configuration error
	Param   string // namespace/name of the param, or name; empty when none
	Outcome Outcome
	// Actions are the binding's validationActions.
	Actions []admissionregistrationv1.ValidationAction
	// Denied is true when this binding denies the request.
	Denied bool
	// FailurePolicyApplied is true when an error made the failurePolicy
	// decide (Fail denies, Ignore allows).
	FailurePolicyApplied bool
	// Timeout is true when the context was cancelled or its deadline passed
	// before the binding finished; Cause is then CauseTimeout.
	Timeout bool
	// Error is the error message when there was one, and Cause its kind.
	Error string
	Cause Cause
	// Messages are the messages of failed validations, in order.
	Messages []string
}

// Denial is one deny decision.
type Denial struct {
	Policy  string
	Binding string // empty for a policy-level configuration error
	Message string
	Reason  metav1.StatusReason
}

// ValidateOption tunes one Validate call.
type ValidateOption func(*validateConfig)

type validateConfig struct {
	trace bool
	exact bool // no fast interpreter; the tests compare the two
}

// WithTrace asks Validate to fill Result.Trace.
func WithTrace() ValidateOption {
	return func(c *validateConfig) { c.trace = true }
}
