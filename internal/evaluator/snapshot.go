package evaluator

import (
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
	// validating ones: they are dispatched by Mutate only.
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
	compositionEnvTemplate()
	s := &Snapshot{}

	policies := make([]*admissionregistrationv1.ValidatingAdmissionPolicy, 0, len(objs.Policies))
	for _, p := range objs.Policies {
		if p == nil {
			continue
		}
		p = p.DeepCopy()
		SetPolicyDefaults(p)
		policies = append(policies, p)
	}
	slices.SortStableFunc(policies, func(a, b *admissionregistrationv1.ValidatingAdmissionPolicy) int {
		return strings.Compare(a.Name, b.Name)
	})
	bindings := make([]*admissionregistrationv1.ValidatingAdmissionPolicyBinding, 0, len(objs.Bindings))
	for _, b := range objs.Bindings {
		if b == nil {
			continue
		}
		b = b.DeepCopy()
		SetBindingDefaults(b)
		bindings = append(bindings, b)
	}
	slices.SortStableFunc(bindings, func(a, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) int {
		return strings.Compare(a.Name, b.Name)
	})

	s.params = newParamStore(objs.Params, opts.ParamScope)

	byName := map[string]*compiledPolicy{}
	for _, p := range policies {
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
		cb, errs := compileValidatingBinding(b)
		s.compileErrors = append(s.compileErrors, errs...)
		cp := byName[b.Spec.PolicyName]
		if cp == nil {
			continue // the plugin ignores bindings of missing policies
		}
		cp.bindings = append(cp.bindings, cb)
		s.stats.Bindings++
	}
	for _, cp := range s.policies {
		if len(cp.bindings) > 0 && cp.paramGVKErr() == nil {
			s.hooks = append(s.hooks, cp)
		}
	}
	s.index = buildRuleIndex(s.hooks)

	s.stats.Policies = len(s.policies)
	s.stats.Hooks = len(s.hooks)
	s.stats.Params = s.params.count
	s.stats.CompileErrors = len(s.compileErrors)
	for _, cp := range s.policies {
		s.stats.Expressions += cp.validating.expressions(cp)
	}
	s.compileMutating(objs, opts)
	return s
}

// compileMutating compiles the MutatingAdmissionPolicies and their
// bindings as Compile does the validating ones.
func (s *Snapshot) compileMutating(objs Objects, opts CompileOptions) {
	policies := make([]*admissionregistrationv1.MutatingAdmissionPolicy, 0, len(objs.MutatingPolicies))
	for _, p := range objs.MutatingPolicies {
		if p != nil {
			p = p.DeepCopy()
			SetMutatingPolicyDefaults(p)
			policies = append(policies, p)
		}
	}
	slices.SortStableFunc(policies, func(a, b *admissionregistrationv1.MutatingAdmissionPolicy) int {
		return strings.Compare(a.Name, b.Name)
	})
	bindings := make([]*admissionregistrationv1.MutatingAdmissionPolicyBinding, 0, len(objs.MutatingBindings))
	for _, b := range objs.MutatingBindings {
		if b != nil {
			b = b.DeepCopy()
			SetMutatingBindingDefaults(b)
			bindings = append(bindings, b)
		}
	}
	slices.SortStableFunc(bindings, func(a, b *admissionregistrationv1.MutatingAdmissionPolicyBinding) int {
		return strings.Compare(a.Name, b.Name)
	})
	m := &s.mutating
	byName := map[string]*compiledPolicy{}
	for _, p := range policies {
		if _, dup := byName[p.Name]; dup {
			continue
		}
		cp := compileMutatingPolicy(p, opts.Mode, s.params)
		cp.index = len(m.policies)
		byName[p.Name] = cp
		m.policies = append(m.policies, cp)
		s.compileErrors = append(s.compileErrors, cp.mutating.compileErrors(cp)...)
		s.stats.Expressions += cp.mutating.expressions(cp)
	}
	for _, b := range bindings {
		cb, errs := compileMutatingBinding(b)
		s.compileErrors = append(s.compileErrors, errs...)
		cp := byName[b.Spec.PolicyName]
		if cp == nil {
			continue
		}
		cp.bindings = append(cp.bindings, cb)
		s.stats.MutatingBindings++
	}
	for _, cp := range m.policies {
		if len(cp.bindings) > 0 && cp.paramGVKErr() == nil {
			m.hooks = append(m.hooks, cp)
		}
	}
	m.index = buildRuleIndex(m.hooks)
	s.stats.MutatingPolicies = len(m.policies)
	s.stats.MutatingHooks = len(m.hooks)
	s.stats.CompileErrors = len(s.compileErrors)
}
