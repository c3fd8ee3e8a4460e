package evaluator

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/cel/environment"
)

// Objects is the input set of one tenant.
type Objects struct {
	Policies []*admissionregistrationv1.ValidatingAdmissionPolicy
	Bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	// Params are the objects that bindings' paramRefs point at: any
	// apiVersion, kind, namespace and name.
	Params []*unstructured.Unstructured
	// MutatingPolicies and MutatingBindings are the tenant's
	// MutatingAdmissionPolicies and their bindings, in the v1 form
	// (the policy store converts v1beta1 and v1alpha1 when it reads them).
	MutatingPolicies []*admissionregistrationv1.MutatingAdmissionPolicy
	MutatingBindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
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

func (m EnvMode) envType() environment.Type {
	if m == NewExpressions {
		return environment.NewExpressions
	}
	return environment.StoredExpressions
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
	Kind    string // ValidatingAdmissionPolicy, MutatingAdmissionPolicy or their Binding
	Name    string
	Field   string // e.g. spec.validations[0].expression
	Message string
}

func (e CompileError) Error() string {
	return fmt.Sprintf("%s %q: %s: %s", e.Kind, e.Name, e.Field, e.Message)
}

// Stats describes a snapshot.
type Stats struct {
	Policies    int // policies compiled
	Hooks       int // policies that have at least one binding
	Bindings    int
	Params      int
	Expressions int
	// Programs counts the expressions whose cel-go program was kept at
	// compile time (the fast interpreter declines them): they weigh about
	// 14 KB each, the others a few hundred bytes until cel-go first runs
	// them (progcache.go).
	Programs      int
	CompileErrors int
	// The same counts for MutatingAdmissionPolicies; Expressions and
	// CompileErrors count both kinds.
	MutatingPolicies int
	MutatingHooks    int
	MutatingBindings int
}
