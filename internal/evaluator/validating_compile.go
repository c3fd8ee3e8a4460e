package evaluator

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
)

const (
	kindPolicy  = "ValidatingAdmissionPolicy"
	kindBinding = "ValidatingAdmissionPolicyBinding"
)

// validatingPolicy is what a ValidatingAdmissionPolicy adds to the shared
// compiled policy.
type validatingPolicy struct {
	validations []compiledValidation
	audits      []compiledAudit

	// Expression lists in the order the plugin evaluates them; nil
	// entries are placeholders for validations without messageExpression.
	validationExprs, messageExprs, auditExprs []*compiledExpr
}

type compiledValidation struct {
	expr     compiledExpr
	message  string
	reason   *string
	msgExpr  *compiledExpr // nil when no messageExpression
	accessor *validating.ValidationCondition
}

type compiledAudit struct {
	key             string
	valueExpression string
	expr            compiledExpr
}

// compileValidatingPolicy compiles a ValidatingAdmissionPolicy whose
// defaults are set.
func compileValidatingPolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy, mode EnvMode, params *paramStore) *compiledPolicy {
	spec := policySpec{
		name:             p.Name,
		failurePolicy:    p.Spec.FailurePolicy,
		matchConstraints: p.Spec.MatchConstraints,
		paramKind:        p.Spec.ParamKind,
		variables:        p.Spec.Variables,
		matchConditions:  p.Spec.MatchConditions,
	}
	cp := newPolicy(spec, params)
	cp.validating = &validatingPolicy{}
	c, err := newExprCompiler(mode, p.Spec.ParamKind != nil)
	if err != nil {
		cp.compileErr = err
		return cp
	}
	defer c.release()
	c.compileShared(cp, &spec)
	c.compileValidating(cp.validating, &p.Spec)
	cp.needsNamespace = c.usesNamespace
	return cp
}

// compileValidating compiles the validations and audit annotations.
func (c *exprCompiler) compileValidating(vp *validatingPolicy, spec *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
	for i, v := range spec.Validations {
		acc := &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		cv := compiledValidation{
			expr:     c.compile(kindValidation, acc, c.vars, fmt.Sprintf("spec.validations[%d].expression", i)),
			message:  v.Message,
			reason:   (*string)(v.Reason),
			accessor: acc,
		}
		if v.MessageExpression != "" {
			macc := &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
			me := c.compile(kindMessage, macc, c.msgVars, fmt.Sprintf("spec.validations[%d].messageExpression", i))
			cv.msgExpr = &me
		}
		vp.validations = append(vp.validations, cv)
	}
	for i, a := range spec.AuditAnnotations {
		acc := &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}
		vp.audits = append(vp.audits, compiledAudit{
			key:             a.Key,
			valueExpression: a.ValueExpression,
			expr:            c.compile(kindAudit, acc, c.vars, fmt.Sprintf("spec.auditAnnotations[%d].valueExpression", i)),
		})
	}
	for i := range vp.validations {
		vp.validationExprs = append(vp.validationExprs, &vp.validations[i].expr)
		vp.messageExprs = append(vp.messageExprs, vp.validations[i].msgExpr)
	}
	for i := range vp.audits {
		vp.auditExprs = append(vp.auditExprs, &vp.audits[i].expr)
	}
}

// compileErrors lists a ValidatingAdmissionPolicy's compile errors, in
// field order.
func (vp *validatingPolicy) compileErrors(cp *compiledPolicy) []CompileError {
	out := cp.compileErrors(kindPolicy)
	for i := range vp.validations {
		v := &vp.validations[i]
		out = appendExprError(out, kindPolicy, cp.name, &v.expr)
		if v.msgExpr != nil {
			out = appendExprError(out, kindPolicy, cp.name, v.msgExpr)
		}
	}
	for i := range vp.audits {
		out = appendExprError(out, kindPolicy, cp.name, &vp.audits[i].expr)
	}
	return out
}

// expressions counts the expressions of a ValidatingAdmissionPolicy.
func (vp *validatingPolicy) expressions(cp *compiledPolicy) int {
	n := len(cp.variables) + len(cp.matchConditions) + len(vp.audits)
	for _, v := range vp.validations {
		n++
		if v.msgExpr != nil {
			n++
		}
	}
	return n
}

func compileValidatingBinding(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) (*compiledBinding, []CompileError) {
	cb, errs := newBinding(kindBinding, b.ObjectMeta, b.Spec.MatchResources, b.Spec.ParamRef)
	cb.actions = b.Spec.ValidationActions
	return cb, errs
}
