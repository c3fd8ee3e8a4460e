package evaluator

import (
	"context"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// Snapshot is an immutable, indexed, compiled policy set for one tenant. It
// is safe for concurrent use.
type Snapshot struct {
	policies      []*compiledPolicy // all compiled policies, by name
	hooks         []*compiledPolicy // policies with at least one binding, by name
	index         *ruleIndex
	params        *paramStore
	compileErrors []CompileError
	stats         Stats
	// mutating are the MutatingAdmissionPolicies, apart from the
	// validating ones: only the Mutating kind evaluates them.
	mutating hookSet
}

// hookSet is the compiled policies of one kind, those with bindings and
// their index.
type hookSet struct {
	policies []*compiledPolicy // by name
	hooks    []*compiledPolicy // with at least one binding, by name
	index    *ruleIndex
}

// CompileErrors returns every compile error, in policy/binding name order.
func (s *Snapshot) CompileErrors() []CompileError {
	return slices.Clone(s.compileErrors)
}

// Stats returns size information about the snapshot.
func (s *Snapshot) Stats() Stats { return s.stats }

// Compile builds a snapshot. It never fails: compile errors are kept,
// reported by CompileErrors, and applied at evaluation time through each
// policy's failurePolicy, as the apiserver does. The input objects are not
// modified; API defaults (failurePolicy Fail, matchPolicy Equivalent, empty
// selectors, rule scope "*") are applied to copies.
func Compile(objs Objects, opts CompileOptions) *Snapshot {
	s, _ := CompileContext(context.Background(), objs, opts)
	return s
}

// CompileContext is Compile that stops when ctx ends, between one policy
// or binding and the next (CEL's own limits on an expression's size and
// depth bound each one): a candidate set sent to the admin API compiles
// within that request's budget and gives its evaluation slot back when the
// caller goes away. The error is ctx's, and the snapshot nil.
func CompileContext(ctx context.Context, objs Objects, opts CompileOptions) (*Snapshot, error) {
	compositionEnvTemplate()
	s := &Snapshot{}

	policies := defaultedByName(objs.Policies, func(p *admissionregistrationv1.ValidatingAdmissionPolicy) *admissionregistrationv1.ValidatingAdmissionPolicy {
		p = p.DeepCopy()
		SetPolicyDefaults(p)
		return p
	})
	bindings := defaultedByName(objs.Bindings, func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
		b = b.DeepCopy()
		SetBindingDefaults(b)
		return b
	})

	s.params = newParamStore(objs.Params, opts.ParamScope)

	byName := map[string]*compiledPolicy{}
	for _, p := range policies {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, dup := byName[p.Name]; dup {
			continue // a later duplicate name cannot exist in a cluster; keep the first
		}
		cp := compileValidatingPolicy(p, opts.Mode, s.params)
		cp.index = len(s.policies)
		byName[p.Name] = cp
		s.policies = append(s.policies, cp)
		s.compileErrors = append(s.compileErrors, cp.validating.compileErrors(cp)...)
	}
	for _, b := range bindings {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cb, errs := compileValidatingBinding(b)
		s.compileErrors = append(s.compileErrors, errs...)
		cp := byName[b.Spec.PolicyName]
		if cp == nil {
			continue // the plugin ignores bindings of missing policies
		}
		cp.bindings = append(cp.bindings, cb)
		s.stats.Bindings++
	}
	s.hooks = withBindings(s.policies)
	s.index = buildRuleIndex(s.hooks)

	s.stats.Policies = len(s.policies)
	s.stats.Hooks = len(s.hooks)
	s.stats.Params = s.params.count
	s.stats.CompileErrors = len(s.compileErrors)
	for _, cp := range s.policies {
		s.stats.Expressions += cp.validating.expressions(cp)
		s.stats.Programs += cp.keptPrograms()
	}
	if err := s.compileMutating(ctx, objs, opts); err != nil {
		return nil, err
	}
	return s, nil
}

// compileMutating compiles the MutatingAdmissionPolicies and their
// bindings as Compile does the validating ones.
func (s *Snapshot) compileMutating(ctx context.Context, objs Objects, opts CompileOptions) error {
	policies := defaultedByName(objs.MutatingPolicies, func(p *admissionregistrationv1.MutatingAdmissionPolicy) *admissionregistrationv1.MutatingAdmissionPolicy {
		p = p.DeepCopy()
		SetMutatingPolicyDefaults(p)
		return p
	})
	bindings := defaultedByName(objs.MutatingBindings, func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) *admissionregistrationv1.MutatingAdmissionPolicyBinding {
		b = b.DeepCopy()
		SetMutatingBindingDefaults(b)
		return b
	})
	m := &s.mutating
	byName := map[string]*compiledPolicy{}
	for _, p := range policies {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, dup := byName[p.Name]; dup {
			continue
		}
		cp := compileMutatingPolicy(p, opts.Mode, s.params)
		cp.index = len(m.policies)
		byName[p.Name] = cp
		m.policies = append(m.policies, cp)
		s.compileErrors = append(s.compileErrors, cp.mutating.compileErrors(cp)...)
		s.stats.Expressions += cp.mutating.expressions(cp)
		s.stats.Programs += cp.keptPrograms()
	}
	for _, b := range bindings {
		if err := ctx.Err(); err != nil {
			return err
		}
		cb, errs := compileMutatingBinding(b)
		s.compileErrors = append(s.compileErrors, errs...)
		cp := byName[b.Spec.PolicyName]
		if cp == nil {
			continue
		}
		cp.bindings = append(cp.bindings, cb)
		s.stats.MutatingBindings++
	}
	m.hooks = withBindings(m.policies)
	m.index = buildRuleIndex(m.hooks)
	s.stats.MutatingPolicies = len(m.policies)
	s.stats.MutatingHooks = len(m.hooks)
	s.stats.CompileErrors = len(s.compileErrors)
	return nil
}

// defaultedByName is the non-nil objects of in, each through prepare (a
// defaulted copy: the input is not modified), in name order; among equal
// names the first stays first.
func defaultedByName[T interface {
	comparable
	GetName() string
}](in []T, prepare func(T) T) []T {
	var zero T
	out := make([]T, 0, len(in))
	for _, o := range in {
		if o != zero {
			out = append(out, prepare(o))
		}
	}
	slices.SortStableFunc(out, func(a, b T) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out
}

// withBindings is the policies that can be invoked: those with a binding,
// whose paramKind is well formed.
func withBindings(policies []*compiledPolicy) []*compiledPolicy {
	var hooks []*compiledPolicy
	for _, cp := range policies {
		if len(cp.bindings) > 0 && cp.paramGVKErr() == nil {
			hooks = append(hooks, cp)
		}
	}
	return hooks
}
