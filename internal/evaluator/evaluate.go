package evaluator

import "context"

// Kind is the admission webhook a request is evaluated as: which of a
// snapshot's two policy sets runs, and how it answers.
type Kind uint8

const (
	// Validating evaluates the ValidatingAdmissionPolicies, as the
	// validating webhook (/validate) does. It is the zero value.
	Validating Kind = iota
	// Mutating evaluates the MutatingAdmissionPolicies, as the mutating
	// webhook (/mutate) does, and answers with their patch.
	Mutating
)

// String is the webhook endpoint's name, the one decisions record:
// "validate" or "mutate".
func (k Kind) String() string {
	if k == Mutating {
		return "mutate"
	}
	return "validate"
}

// Option tunes one evaluation.
type Option func(*evalConfig)

type evalConfig struct {
	ns        NamespaceLookup
	trace     bool
	exact     bool // no fast interpreter; the tests compare the two
	costLimit int64
}

// WithNamespaces evaluates against ns, the cluster's inventory: its
// namespaces, and its CRDs when ns is also a CRDLookup. Without it every
// namespace is unknown, and bindings that need one follow their
// failurePolicy.
func WithNamespaces(ns NamespaceLookup) Option {
	return func(c *evalConfig) { c.ns = ns }
}

// WithTrace asks for Result.Trace. It does not change the answer.
func WithTrace() Option {
	return func(c *evalConfig) { c.trace = true }
}

// Evaluate evaluates one request against the snapshot's policies of kind
// (validating.go and mutating.go say how). It is the one entry point of every
// caller: the webhook, the admin API's evaluate, and whatever else answers
// a request as a webhook would. Cancelling ctx (or its deadline)
// interrupts CEL evaluation; each unfinished binding then follows its
// failurePolicy and its BindingResult says Timeout.
func (s *Snapshot) Evaluate(ctx context.Context, kind Kind, req *Request, opts ...Option) *Result {
	var cfg evalConfig
	for _, o := range opts {
		o(&cfg)
	}
	if kind == Mutating {
		return s.mutate(ctx, req, &cfg)
	}
	return s.validate(ctx, req, &cfg)
}
