package evaluator

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	celgo "github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

const (
	kindPolicy  = "ValidatingAdmissionPolicy"
	kindBinding = "ValidatingAdmissionPolicyBinding"
)

var (
	baseEnvOnce sync.Once
	baseEnvSet  *environment.EnvSet
	parseEnv    *celgo.Env
)

// compositionEnvTemplate is the environment the apiserver's plugin compiles
// every policy with (plugin.go getCompositionEnvTemplateWithStrictCost).
func compositionEnvTemplate() *environment.EnvSet {
	baseEnvOnce.Do(func() {
		baseEnvSet = environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
		parseEnv = baseEnvSet.StoredExpressionsEnv()
	})
	return baseEnvSet
}

func (m EnvMode) envType() environment.Type {
	if m == NewExpressions {
		return environment.NewExpressions
	}
	return environment.StoredExpressions
}

// compiledExpr is one compiled CEL expression.
type compiledExpr struct {
	field  string // e.g. spec.validations[0].expression
	text   string
	result plugincel.CompilationResult
	shared *progEntry   // keeps the shared compile result alive
	fast   *fastProgram // see fast.go; nil when cel-go must evaluate it
}

type compiledVariable struct {
	name string
	expr compiledExpr
	// cacheable variables do not read other variables, so their value and
	// cost depend only on the activation's inputs: a request can evaluate
	// them once and charge the recorded cost wherever the plugin would
	// evaluate them again.
	cacheable bool
	// shareKey is set for cacheable variables that do not read params
	// either; they are shared across policies.
	shareKey string
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

type compiledMatchCondition struct {
	name string
	expr compiledExpr
}

// compiledPolicy is a policy compiled once, mirroring the plugin's
// compilePolicy: the same compiler, variable composition and accessors.
type compiledPolicy struct {
	index         int
	name          string
	policy        *admissionregistrationv1.ValidatingAdmissionPolicy
	failurePolicy *admissionregistrationv1.FailurePolicyType

	// constraintsErr is the error DefinitionMatches returns for every
	// request (missing matchConstraints or selectors).
	constraintsErr error
	match          *compiledMatch
	// compileErr is a policy-wide error (the composited compiler could not
	// be built); it is reported per binding like the plugin's validator.
	compileErr error

	paramGVK        *schema.GroupVersionKind
	paramNamespaced bool

	variables       []compiledVariable // unique names, last definition wins, in first-seen order
	varIndex        map[string]int     // name -> index in variables
	matchConditions []compiledMatchCondition
	validations     []compiledValidation
	audits          []compiledAudit

	// Expression lists in the order the plugin evaluates them; nil
	// entries are placeholders for validations without messageExpression.
	matchExprs, validationExprs, messageExprs, auditExprs []*compiledExpr

	// needsNamespace is true when some expression uses namespaceObject for
	// more than metadata.name.
	needsNamespace bool

	bindings []*compiledBinding
}

type compiledBinding struct {
	name     string
	binding  *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	match    *compiledMatch // nil when the binding has no matchResources
	matchErr error          // nil selector errors
	paramRef *compiledParamRef
	actions  []admissionregistrationv1.ValidationAction
	deny     bool
}

// Snapshot is an immutable, indexed, compiled policy set for one tenant. It
// is safe for concurrent use.
type Snapshot struct {
	policies      []*compiledPolicy // all compiled policies, by name
	hooks         []*compiledPolicy // policies with at least one binding, by name
	index         *ruleIndex
	params        *paramStore
	compileErrors []CompileError
	stats         Stats
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
		cp := compilePolicy(p, opts.Mode, s.params)
		cp.index = len(s.policies)
		byName[p.Name] = cp
		s.policies = append(s.policies, cp)
		s.compileErrors = append(s.compileErrors, policyCompileErrors(cp)...)
	}
	for _, b := range bindings {
		cb, errs := compileBinding(b)
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
		s.stats.Expressions += len(cp.variables) + len(cp.matchConditions) + len(cp.audits)
		for _, v := range cp.validations {
			s.stats.Expressions++
			if v.msgExpr != nil {
				s.stats.Expressions++
			}
		}
	}
	return s
}

// paramGVKErr mirrors calculatePolicyData: a policy whose paramKind
// apiVersion does not parse is left out of the hooks entirely.
func (cp *compiledPolicy) paramGVKErr() error {
	if pk := cp.policy.Spec.ParamKind; pk != nil {
		if _, err := schema.ParseGroupVersion(pk.APIVersion); err != nil {
			return fmt.Errorf("failed to parse paramKind APIVersion: %w", err)
		}
	}
	return nil
}

// SetPolicyDefaults applies the API server's defaults for
// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy, as a write
// through the API would.
func SetPolicyDefaults(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
	if p.Spec.FailurePolicy == nil {
		f := admissionregistrationv1.Fail
		p.Spec.FailurePolicy = &f
	}
	if p.Spec.MatchConstraints != nil {
		setMatchResourcesDefaults(p.Spec.MatchConstraints)
	}
}

// SetBindingDefaults applies the API server's defaults for
// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding.
func SetBindingDefaults(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	if b.Spec.MatchResources != nil {
		setMatchResourcesDefaults(b.Spec.MatchResources)
	}
}

func setMatchResourcesDefaults(m *admissionregistrationv1.MatchResources) {
	if m.MatchPolicy == nil {
		mp := admissionregistrationv1.Equivalent
		m.MatchPolicy = &mp
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for i := range m.ResourceRules {
		if m.ResourceRules[i].Scope == nil {
			s := admissionregistrationv1.AllScopes
			m.ResourceRules[i].Scope = &s
		}
	}
	for i := range m.ExcludeResourceRules {
		if m.ExcludeResourceRules[i].Scope == nil {
			s := admissionregistrationv1.AllScopes
			m.ExcludeResourceRules[i].Scope = &s
		}
	}
}

func compilePolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy, mode EnvMode, params *paramStore) *compiledPolicy {
	cp := &compiledPolicy{name: p.Name, policy: p, failurePolicy: p.Spec.FailurePolicy}
	cp.match, cp.constraintsErr = compileConstraints(p.Spec.MatchConstraints)

	if pk := p.Spec.ParamKind; pk != nil {
		if gv, err := schema.ParseGroupVersion(pk.APIVersion); err == nil {
			gvk := gv.WithKind(pk.Kind)
			cp.paramGVK = &gvk
			cp.paramNamespaced = params.namespaced(gvk)
		}
	}

	hasParam := p.Spec.ParamKind != nil
	optionalVars := plugincel.OptionalVariableDeclarations{HasParams: hasParam, HasAuthorizer: true}
	expressionOptionalVars := plugincel.OptionalVariableDeclarations{HasParams: hasParam, HasAuthorizer: false}
	envType := mode.envType()

	fc, err := getCompiler()
	if err != nil {
		cp.compileErr = err
		return cp
	}
	defer putCompiler(fc)
	usesNamespace := false
	check := func(field, text string, res plugincel.CompilationResult, shared *progEntry) compiledExpr {
		ce := compiledExpr{field: field, text: text, result: res, shared: shared}
		switch {
		case res.Error != nil:
		case shared != nil:
			ce.fast = shared.fast
		default:
			ce.fast = compileFast(parseEnv, text)
		}
		if res.Error == nil && (strings.Contains(text, "authorizer") || strings.Contains(text, "namespaceObject")) {
			auth, nsFull := analyse(text)
			if auth {
				ce.result = plugincel.CompilationResult{
					ExpressionAccessor: res.ExpressionAccessor,
					Error: &apiservercel.Error{
						Type:   apiservercel.ErrorTypeInvalid,
						Detail: errAuthorizerUnsupported,
					},
				}
				ce.fast = nil
			}
			usesNamespace = usesNamespace || nsFull
		}
		return ce
	}

	seen := map[string]int{}
	for i, v := range p.Spec.Variables {
		acc := &validating.Variable{Name: v.Name, Expression: v.Expression}
		res, sh := fc.compile(kindVariable, acc, optionalVars, envType)
		ce := check(fmt.Sprintf("spec.variables[%d].expression", i), v.Expression, res, sh)
		if j, ok := seen[v.Name]; ok {
			cp.variables[j].expr = ce
			continue
		}
		seen[v.Name] = len(cp.variables)
		cp.variables = append(cp.variables, compiledVariable{name: v.Name, expr: ce})
	}
	cp.varIndex = seen
	for i := range cp.variables {
		v := &cp.variables[i]
		v.cacheable = !strings.Contains(v.expr.text, "variables")
		if v.cacheable && !strings.Contains(v.expr.text, "params") {
			v.shareKey = v.name + "\x00" + v.expr.text
		}
	}
	for i := range p.Spec.MatchConditions {
		mc := &p.Spec.MatchConditions[i]
		res, sh := fc.compile(kindMatchCondition, (*matchconditions.MatchCondition)(mc), optionalVars, envType)
		cp.matchConditions = append(cp.matchConditions, compiledMatchCondition{
			name: mc.Name,
			expr: check(fmt.Sprintf("spec.matchConditions[%d].expression", i), mc.Expression, res, sh),
		})
	}
	for i, v := range p.Spec.Validations {
		acc := &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		res, sh := fc.compile(kindValidation, acc, optionalVars, envType)
		cv := compiledValidation{
			expr:     check(fmt.Sprintf("spec.validations[%d].expression", i), v.Expression, res, sh),
			message:  v.Message,
			reason:   (*string)(v.Reason),
			accessor: acc,
		}
		if v.MessageExpression != "" {
			macc := &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
			mres, msh := fc.compile(kindMessage, macc, expressionOptionalVars, envType)
			me := check(fmt.Sprintf("spec.validations[%d].messageExpression", i), v.MessageExpression, mres, msh)
			cv.msgExpr = &me
		}
		cp.validations = append(cp.validations, cv)
	}
	for i, a := range p.Spec.AuditAnnotations {
		acc := &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}
		res, sh := fc.compile(kindAudit, acc, optionalVars, envType)
		cp.audits = append(cp.audits, compiledAudit{
			key:             a.Key,
			valueExpression: a.ValueExpression,
			expr:            check(fmt.Sprintf("spec.auditAnnotations[%d].valueExpression", i), a.ValueExpression, res, sh),
		})
	}
	cp.needsNamespace = usesNamespace
	for i := range cp.matchConditions {
		cp.matchExprs = append(cp.matchExprs, &cp.matchConditions[i].expr)
	}
	for i := range cp.validations {
		cp.validationExprs = append(cp.validationExprs, &cp.validations[i].expr)
		cp.messageExprs = append(cp.messageExprs, cp.validations[i].msgExpr)
	}
	for i := range cp.audits {
		cp.auditExprs = append(cp.auditExprs, &cp.audits[i].expr)
	}
	return cp
}

const errAuthorizerUnsupported = "compilation failed: authorizer and authorizer.requestResource are not supported: " +
	"Portcullis evaluates policies outside the cluster, where authorization checks cannot run"

// analyse reports whether an expression refers to the authorizer, and
// whether it uses namespaceObject for anything but metadata.name.
func analyse(text string) (usesAuthorizer, needsNamespace bool) {
	a, iss := parseEnv.Parse(text)
	if iss != nil && iss.Err() != nil {
		return false, strings.Contains(text, "namespaceObject")
	}
	nameOnly := map[int64]bool{}
	var nsIdents []int64
	celast.PreOrderVisit(a.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		switch e.Kind() {
		case celast.IdentKind:
			switch e.AsIdent() {
			case "authorizer":
				usesAuthorizer = true
			case "namespaceObject":
				nsIdents = append(nsIdents, e.ID())
			}
		case celast.SelectKind:
			sel := e.AsSelect()
			if sel.FieldName() != "name" || sel.Operand().Kind() != celast.SelectKind {
				return
			}
			inner := sel.Operand().AsSelect()
			if inner.FieldName() == "metadata" && !inner.IsTestOnly() && inner.Operand().Kind() == celast.IdentKind &&
				inner.Operand().AsIdent() == "namespaceObject" {
				nameOnly[inner.Operand().ID()] = true
			}
		}
	}))
	for _, id := range nsIdents {
		if !nameOnly[id] {
			needsNamespace = true
		}
	}
	return usesAuthorizer, needsNamespace
}

func policyCompileErrors(cp *compiledPolicy) []CompileError {
	var out []CompileError
	add := func(field, msg string) {
		out = append(out, CompileError{Kind: kindPolicy, Name: cp.name, Field: field, Message: msg})
	}
	if cp.compileErr != nil {
		add("spec", cp.compileErr.Error())
	}
	if err := cp.paramGVKErr(); err != nil {
		add("spec.paramKind.apiVersion", err.Error())
	}
	if cp.policy.Spec.MatchConstraints == nil {
		add("spec.matchConstraints", "Required value")
	} else if cp.match != nil && cp.match.err != nil {
		add("spec.matchConstraints", cp.match.err.Error())
	}
	exprErr := func(e compiledExpr) {
		if e.result.Error != nil {
			add(e.field, e.result.Error.Error())
		}
	}
	for _, v := range cp.variables {
		exprErr(v.expr)
	}
	for _, m := range cp.matchConditions {
		exprErr(m.expr)
	}
	for _, v := range cp.validations {
		exprErr(v.expr)
		if v.msgExpr != nil {
			exprErr(*v.msgExpr)
		}
	}
	for _, a := range cp.audits {
		exprErr(a.expr)
	}
	return out
}

func compileBinding(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) (*compiledBinding, []CompileError) {
	cb := &compiledBinding{name: b.Name, binding: b, actions: b.Spec.ValidationActions}
	for _, a := range cb.actions {
		if a == admissionregistrationv1.Deny {
			cb.deny = true
		}
	}
	var errs []CompileError
	if mr := b.Spec.MatchResources; mr != nil {
		cb.match, cb.matchErr = compileMatchResources(mr)
		if cb.match != nil && cb.match.err != nil {
			errs = append(errs, CompileError{Kind: kindBinding, Name: b.Name, Field: "spec.matchResources", Message: cb.match.err.Error()})
		}
	}
	if cb.matchErr != nil {
		errs = append(errs, CompileError{Kind: kindBinding, Name: b.Name, Field: "spec.matchResources", Message: cb.matchErr.Error()})
	}
	if pr := b.Spec.ParamRef; pr != nil {
		cb.paramRef = compileParamRef(pr)
		if cb.paramRef.selectorErr != nil {
			errs = append(errs, CompileError{Kind: kindBinding, Name: b.Name, Field: "spec.paramRef.selector", Message: cb.paramRef.selectorErr.Error()})
		}
	}
	return cb, errs
}
