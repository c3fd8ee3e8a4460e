// Package evaluator compiles a tenant's ValidatingAdmissionPolicies, bindings
// and params into an immutable, indexed Snapshot and evaluates admission
// requests against it with the semantics of the kube-apiserver
// ValidatingAdmissionPolicy plugin (k8s.io/apiserver v0.37.x).
//
// The package is pure: no database, no HTTP. It uses the apiserver's own CEL
// environment, compiler and libraries; only the dispatch around them (matching,
// params, decisions, the final status) is re-implemented, and a differential
// test in test/differential holds it to the plugin's answers byte for byte.
package evaluator

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Objects is the input set of one tenant.
type Objects struct {
	Policies []*admissionregistrationv1.ValidatingAdmissionPolicy
	Bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	// Params are the objects that bindings' paramRefs point at: any
	// apiVersion, kind, namespace and name.
	Params []*unstructured.Unstructured
}

// EnvMode selects the CEL environment used to compile expressions.
type EnvMode uint8

const (
	// StoredExpressions is the environment for loading policies that were
	// already accepted; it is the more permissive one, so an upgrade never
	// breaks a saved policy. It is the zero value.
	StoredExpressions EnvMode = iota
	// NewExpressions is the environment for checking newly written
	// expressions, as the apiserver does on create and update.
	NewExpressions
)

func (m EnvMode) String() string {
	if m == NewExpressions {
		return "NewExpressions"
	}
	return "StoredExpressions"
}

// CompileOptions tunes Compile.
type CompileOptions struct {
	Mode EnvMode
	// ParamScope tells whether a param kind is namespaced, as the cluster's
	// RESTMapper would. When nil, or when it answers known=false, the scope is
	// inferred: a kind with any namespaced param is namespaced, a kind whose
	// params are all cluster-scoped is cluster-scoped, and well-known kinds
	// (ConfigMap, Secret, ...) use their built-in scope; anything else is
	// taken as namespaced.
	ParamScope func(gvk schema.GroupVersionKind) (namespaced, known bool)
}

// CompileError is an error found while compiling one field of a policy or
// binding. A snapshot keeps it and applies it at evaluation time through the
// policy's failurePolicy; a write path can refuse the object with 422.
type CompileError struct {
	Kind    string // ValidatingAdmissionPolicy or ValidatingAdmissionPolicyBinding
	Name    string
	Field   string // e.g. spec.validations[0].expression
	Message string
}

func (e CompileError) Error() string {
	return fmt.Sprintf("%s %q: %s: %s", e.Kind, e.Name, e.Field, e.Message)
}

// NamespaceLookup returns a namespace's whole object. false means the
// namespace is unknown to the inventory.
type NamespaceLookup interface {
	Namespace(name string) (*corev1.Namespace, bool)
}

// NamespaceMap is a NamespaceLookup backed by a map, for tests and tools.
type NamespaceMap map[string]*corev1.Namespace

// Namespace implements NamespaceLookup.
func (m NamespaceMap) Namespace(name string) (*corev1.Namespace, bool) {
	ns, ok := m[name]
	return ns, ok
}

// Request is one admission request, decoded once, in the form the evaluator
// reads. Kind/Resource/SubResource are what the webhook received;
// RequestKind/RequestResource/RequestSubResource are the original request
// (the apiserver's attributes). They are equal unless the webhook
// configuration made the apiserver convert the object.
type Request struct {
	UID                string
	Kind               schema.GroupVersionKind
	Resource           schema.GroupVersionResource
	SubResource        string
	RequestKind        schema.GroupVersionKind
	RequestResource    schema.GroupVersionResource
	RequestSubResource string
	Name               string
	Namespace          string
	Operation          admissionregistrationv1.OperationType // CREATE, UPDATE, DELETE or CONNECT
	UserInfo           authenticationv1.UserInfo
	// Object and OldObject are the decoded JSON objects (nil when absent), as
	// encoding/json or the apimachinery JSON helpers produce them:
	// map[string]any, []any, string, bool, int64/float64 (or json.Number
	// converted to those), nil.
	Object    map[string]any
	OldObject map[string]any
	// Options is the operation's options object (CreateOptions, ...), as raw
	// JSON or a decoded object; it is what CEL sees as request.options.
	Options runtime.RawExtension
	DryRun  bool
}

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
	// before the binding finished.
	Timeout bool
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

// ValidateOption tunes one Validate call.
type ValidateOption func(*validateConfig)

type validateConfig struct {
	trace bool
	exact bool // no fast path; the tests compare the two
}

// WithTrace asks Validate to fill Result.Trace.
func WithTrace() ValidateOption {
	return func(c *validateConfig) { c.trace = true }
}

// PolicyTrace explains what happened to one policy.
type PolicyTrace struct {
	Policy   string
	Matched  bool
	Reason   string // why it did not match, or its configuration error
	Bindings []BindingTrace
}

// BindingTrace explains what happened to one binding of a matched policy.
type BindingTrace struct {
	Binding          string
	Param            string
	Matched          bool
	Reason           string
	MatchConditions  []ExpressionTrace
	Validations      []ExpressionTrace
	AuditAnnotations []ExpressionTrace
	Outcome          Outcome
	Cost             int64 // CEL cost of the validations, messages and audit annotations
}

// ExpressionTrace is one evaluated expression.
type ExpressionTrace struct {
	Name       string // matchCondition name, audit annotation key, or validation index
	Expression string
	Result     string // the CEL value, or empty on error
	Message    string // for a failed validation: its final message
	Error      string
	Cost       int64
}

// Stats describes a snapshot.
type Stats struct {
	Policies      int // policies compiled
	Hooks         int // policies that have at least one binding
	Bindings      int
	Params        int
	Expressions   int
	CompileErrors int
}
