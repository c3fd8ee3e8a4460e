package evaluator

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
)

const (
	kindMutatingPolicy  = "MutatingAdmissionPolicy"
	kindMutatingBinding = "MutatingAdmissionPolicyBinding"
)

// mutatingPolicy is what a MutatingAdmissionPolicy adds to the shared
// compiled policy.
type mutatingPolicy struct {
	mutations    []compiledMutation
	reinvocation admissionregistrationv1.ReinvocationPolicyType
	// paths is what the policy's expressions read of object and
	// oldObject, for the fast path's typed view (mutfast_paths.go).
	paths *typedPaths
}

// compiledMutation is one entry of spec.mutations. expr is nil for an
// entry whose patchType has no expression set: the plugin compiles no
// patcher for it and then refuses every request the policy is invoked
// for (a 500).
type compiledMutation struct {
	patchType admissionregistrationv1.PatchType
	expr      *compiledExpr
}

// compileMutatingPolicy compiles a MutatingAdmissionPolicy whose defaults
// are set, as the plugin's compilePolicy does: variables and
// matchConditions as for every policy, then each mutation with the patch
// types (JSONPatch, Object) declared.
func compileMutatingPolicy(p *admissionregistrationv1.MutatingAdmissionPolicy, mode EnvMode, params *paramStore) *compiledPolicy {
	spec := policySpec{
		name:             p.Name,
		failurePolicy:    p.Spec.FailurePolicy,
		matchConstraints: p.Spec.MatchConstraints,
		paramKind:        p.Spec.ParamKind,
		variables:        p.Spec.Variables,
		matchConditions:  p.Spec.MatchConditions,
	}
	cp := newPolicy(spec, params)
	mp := &mutatingPolicy{reinvocation: p.Spec.ReinvocationPolicy}
	cp.mutating = mp
	c, err := newExprCompiler(mode, p.Spec.ParamKind != nil)
	if err != nil {
		cp.compileErr = err
		return cp
	}
	defer c.release()
	c.compileShared(cp, &spec)
	patchVars := c.vars
	patchVars.HasPatchTypes = true
	for i, m := range p.Spec.Mutations {
		cm := compiledMutation{patchType: m.PatchType}
		switch {
		case m.PatchType == admissionregistrationv1.PatchTypeJSONPatch && m.JSONPatch != nil:
			ce := c.compile(kindJSONPatch, &patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}, patchVars,
				fmt.Sprintf("spec.mutations[%d].jsonPatch.expression", i))
			cm.expr = &ce
		case m.PatchType == admissionregistrationv1.PatchTypeApplyConfiguration && m.ApplyConfiguration != nil:
			ce := c.compile(kindApplyConfiguration, &patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}, patchVars,
				fmt.Sprintf("spec.mutations[%d].applyConfiguration.expression", i))
			cm.expr = &ce
		}
		mp.mutations = append(mp.mutations, cm)
	}
	cp.needsNamespace = c.usesNamespace
	mp.paths = mutatingReadPaths(p)
	return cp
}

// mutatingReadPaths is what a policy's expressions read of its objects.
func mutatingReadPaths(p *admissionregistrationv1.MutatingAdmissionPolicy) *typedPaths {
	tp := &typedPaths{}
	for _, v := range p.Spec.Variables {
		tp.readPaths(v.Expression)
	}
	for _, mc := range p.Spec.MatchConditions {
		tp.readPaths(mc.Expression)
	}
	for _, m := range p.Spec.Mutations {
		switch {
		case m.JSONPatch != nil:
			tp.readPaths(m.JSONPatch.Expression)
		case m.ApplyConfiguration != nil:
			tp.readPaths(m.ApplyConfiguration.Expression)
		}
	}
	return tp
}

// patchers counts the mutations the plugin compiles a patcher for.
func (mp *mutatingPolicy) patchers() int {
	n := 0
	for _, m := range mp.mutations {
		if m.expr != nil {
			n++
		}
	}
	return n
}

// compileErrors lists a MutatingAdmissionPolicy's compile errors, in field
// order.
func (mp *mutatingPolicy) compileErrors(cp *compiledPolicy) []CompileError {
	out := cp.compileErrors(kindMutatingPolicy)
	for i, m := range mp.mutations {
		if m.expr == nil {
			out = append(out, CompileError{Kind: kindMutatingPolicy, Name: cp.name, Field: fmt.Sprintf("spec.mutations[%d]", i),
				Message: fmt.Sprintf("no expression for patchType %q", m.patchType)})
			continue
		}
		out = appendExprError(out, kindMutatingPolicy, cp.name, m.expr)
	}
	return out
}

// expressions counts the expressions of a MutatingAdmissionPolicy.
func (mp *mutatingPolicy) expressions(cp *compiledPolicy) int {
	n := len(cp.variables) + len(cp.matchConditions)
	for _, m := range mp.mutations {
		if m.expr != nil {
			n++
		}
	}
	return n
}

func compileMutatingBinding(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) (*compiledBinding, []CompileError) {
	return newBinding(kindMutatingBinding, b.ObjectMeta, b.Spec.MatchResources, b.Spec.ParamRef)
}

// SetMutatingPolicyDefaults applies the API server's defaults for
// admissionregistration.k8s.io/v1 MutatingAdmissionPolicy, as a write
// through the API would.
func SetMutatingPolicyDefaults(p *admissionregistrationv1.MutatingAdmissionPolicy) {
	if p.Spec.FailurePolicy == nil {
		f := admissionregistrationv1.Fail
		p.Spec.FailurePolicy = &f
	}
	if p.Spec.MatchConstraints != nil {
		setMatchResourcesDefaults(p.Spec.MatchConstraints)
	}
}

// SetMutatingBindingDefaults applies the API server's defaults for
// admissionregistration.k8s.io/v1 MutatingAdmissionPolicyBinding.
func SetMutatingBindingDefaults(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	if b.Spec.MatchResources != nil {
		setMatchResourcesDefaults(b.Spec.MatchResources)
	}
}
