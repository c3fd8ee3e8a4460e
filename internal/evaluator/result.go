package evaluator

import (
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Result is the outcome of one Snapshot.Evaluate call.
type Result struct {
	Allowed bool
	// MissingCRD is set when a binding needed the CustomResourceDefinition
	// of the request's custom resource, to present it in the version the
	// policy matched (crds.go) or to mutate it (crd_typeconverter.go), and
	// the inventory lacks it. A bool next to
	// Allowed takes no room: a string made every Result 16 bytes bigger.
	MissingCRD bool
	// Patch is, for Mutating, an RFC 6902 JSON patch that turns the
	// request's object into Object; nil when the object did not change.
	Patch []byte
	// Object is, for Mutating, the final object when it changed.
	Object map[string]any
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
	// PendingNamespace is set when that namespace is known, but a change
	// the gateway allowed and nothing has confirmed yet supersedes its
	// stored object, so a binding that read namespaceObject could not be
	// evaluated.
	PendingNamespace bool
	// Trace is filled only with WithTrace().
	Trace []PolicyTrace
	// CostLimitExceeded is set when the request's cost limit
	// (WithCostLimit) stopped an evaluation.
	CostLimitExceeded bool
	// Cost is the CEL cost the request's evaluations charged to its cost
	// limit (WithCostLimit; 0 without one): exact for cel-go's
	// evaluations, the fast interpreter's upper bound for its own.
	Cost int64
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
	// OutcomeClusterSkipped: the binding's ClusterSelectorAnnotation does
	// not select the calling cluster, so it did not apply.
	OutcomeClusterSkipped Outcome = "ClusterSkipped"
)

// Cause says what kind of error a BindingResult's Error is. It is set where
// the error is made, so that callers (metrics, decisions) need not read the
// message. It is a byte, not a string, to keep BindingResult as small as it
// was: a request makes one per matched binding.
type Cause uint8

const (
	// CauseNone: no error.
	CauseNone Cause = iota
	// CauseTimeout: the context was cancelled or its deadline passed
	// before the binding finished.
	CauseTimeout
	// CauseUnknownNamespace: the binding needed more than the name of a
	// namespace the inventory lacks (its labels for a namespaceSelector,
	// or namespaceObject).
	CauseUnknownNamespace
	// CauseCompileError: the policy, an expression the binding evaluated
	// or a variable that expression read does not compile.
	CauseCompileError
	// CauseConfiguration: the policy or binding cannot be applied to the
	// request: missing matchConstraints, a bad selector or paramRef, or an
	// object the webhook received in another version than the policy
	// matched.
	CauseConfiguration
	// CauseParamNotFound: no param was found and parameterNotFoundAction
	// is Deny.
	CauseParamNotFound
	// CauseError: any other error: a runtime error, the cost limit or
	// budget, an audit annotation of the wrong type.
	CauseError
)

var causeNames = [...]string{
	CauseNone:             "",
	CauseTimeout:          "Timeout",
	CauseUnknownNamespace: "UnknownNamespace",
	CauseCompileError:     "CompileError",
	CauseConfiguration:    "Configuration",
	CauseParamNotFound:    "ParamNotFound",
	CauseError:            "Error",
}

// String is the cause's name; empty for CauseNone.
func (c Cause) String() string {
	if int(c) < len(causeNames) {
		return causeNames[c]
	}
	return "Cause(" + strconv.Itoa(int(c)) + ")"
}

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
	// Cause is the kind of Error, set with it.
	Cause Cause
	// Mutated is set when a MutatingAdmissionPolicy's mutations ran and
	// at least one applied (the plugin's Dirty flag: a patch call that
	// returned, even one that changed nothing).
	Mutated bool
	// Reinvoked marks the result of a second pass, where the
	// reinvocationPolicy IfNeeded policies ran again.
	// (The two flags sit in the padding after Cause.)
	Reinvoked bool
	// Error is the error message when there was one.
	Error string
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
