package evaluator

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/portcullis-dev/portcullis/internal/evaluator/fastcel"
)

// compiledExpr is one compiled CEL expression.
type compiledExpr struct {
	field  string // e.g. spec.validations[0].expression
	text   string
	result plugincel.CompilationResult
	shared *progEntry       // keeps the shared compile result alive
	fast   *fastcel.Program // nil when cel-go must evaluate it
}

// program is cel-go's program of the expression, planned on first use when
// the compile deferred it (progcache.go); nil with an error when that
// fails, which it cannot short of a bug.
func (ce *compiledExpr) program() (cel.Program, error) {
	if ce.result.Program != nil {
		return ce.result.Program, nil
	}
	if ce.shared != nil && ce.shared.lazy != nil {
		return ce.shared.lazy.get()
	}
	return nil, errors.New("no program")
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

type compiledMatchCondition struct {
	name string
	expr compiledExpr
}

// compiledPolicy is a policy compiled once, mirroring the plugin's
// compilePolicy: the same compiler, variable composition and accessors.
// Its fields are what every kind of admission policy has and the shared
// dispatch reads (matching, params, variables, matchConditions,
// failurePolicy); the kind's own part hangs off it.
type compiledPolicy struct {
	index         int
	name          string
	failurePolicy *admissionregistrationv1.FailurePolicyType

	// constraintsErr is the error DefinitionMatches returns for every
	// request (missing matchConstraints or selectors).
	constraintsErr error
	noConstraints  bool
	match          *compiledMatch
	// compileErr is a policy-wide error (the composited compiler could not
	// be built); it is reported per binding like the plugin's validator.
	compileErr error

	paramKind       *admissionregistrationv1.ParamKind
	paramGVK        *schema.GroupVersionKind
	paramNamespaced bool

	variables       []compiledVariable // unique names, last definition wins, in first-seen order
	varIndex        map[string]int     // name -> index in variables
	matchConditions []compiledMatchCondition
	matchExprs      []*compiledExpr // in the order the plugin evaluates them

	// needsNamespace is true when some expression uses namespaceObject for
	// more than metadata.name.
	needsNamespace bool

	bindings []*compiledBinding

	// validating is a ValidatingAdmissionPolicy's own part; never nil for
	// one.
	validating *validatingPolicy
	// mutating is a MutatingAdmissionPolicy's own part; never nil for one.
	mutating *mutatingPolicy
}

// compiledBinding is a binding compiled once.
type compiledBinding struct {
	name     string
	match    *compiledMatch // nil when the binding has no matchResources
	matchErr error          // nil selector errors
	paramRef *compiledParamRef
	// clusterSel is the binding's ClusterSelectorAnnotation; nil when it
	// has none and applies to every cluster.
	clusterSel labels.Selector
	// actions are a ValidatingAdmissionPolicyBinding's validationActions.
	actions []admissionregistrationv1.ValidationAction
}

// policySpec is what the specs of all admission policy kinds share.
type policySpec struct {
	name             string
	failurePolicy    *admissionregistrationv1.FailurePolicyType
	matchConstraints *admissionregistrationv1.MatchResources
	paramKind        *admissionregistrationv1.ParamKind
	variables        []admissionregistrationv1.Variable
	matchConditions  []admissionregistrationv1.MatchCondition
}

// newPolicy compiles the matching and params of a policy; its expressions
// are compiled with an exprCompiler.
func newPolicy(spec policySpec, params *paramStore) *compiledPolicy {
	cp := &compiledPolicy{name: spec.name, failurePolicy: spec.failurePolicy, paramKind: spec.paramKind,
		noConstraints: spec.matchConstraints == nil}
	cp.match, cp.constraintsErr = compileConstraints(spec.matchConstraints)
	if pk := spec.paramKind; pk != nil {
		if gv, err := schema.ParseGroupVersion(pk.APIVersion); err == nil {
			gvk := gv.WithKind(pk.Kind)
			cp.paramGVK = &gvk
			cp.paramNamespaced = params.namespaced(gvk)
		}
	}
	return cp
}

// paramGVKErr mirrors calculatePolicyData: a policy whose paramKind
// apiVersion does not parse is left out of the hooks entirely.
func (cp *compiledPolicy) paramGVKErr() error {
	if pk := cp.paramKind; pk != nil {
		if _, err := schema.ParseGroupVersion(pk.APIVersion); err != nil {
			return fmt.Errorf("failed to parse paramKind APIVersion: %w", err)
		}
	}
	return nil
}

func failurePolicyOf(cp *compiledPolicy) admissionregistrationv1.FailurePolicyType {
	if cp.failurePolicy == nil {
		return admissionregistrationv1.Fail
	}
	return *cp.failurePolicy
}

// exprCompiler compiles the expressions of one policy with a pooled
// compiler, in the plugin's order: the variables first, since each
// declares its type to the expressions compiled after it.
type exprCompiler struct {
	fc      *pooledCompiler
	envType environment.Type
	// vars are the optional variables every expression sees but a
	// messageExpression, which has no authorizer (msgVars).
	vars, msgVars plugincel.OptionalVariableDeclarations
	// usesNamespace is set once an expression uses namespaceObject for more
	// than metadata.name.
	usesNamespace bool
}

func newExprCompiler(mode EnvMode, hasParams bool) (*exprCompiler, error) {
	fc, err := getCompiler()
	if err != nil {
		return nil, err
	}
	return &exprCompiler{
		fc:      fc,
		envType: mode.envType(),
		vars:    plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true},
		msgVars: plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: false},
	}, nil
}

func (c *exprCompiler) release() { putCompiler(c.fc) }

// compile compiles one expression, and for the fast interpreter too. An
// expression that uses the authorizer is a compile error here.
func (c *exprCompiler) compile(kind progKind, acc plugincel.ExpressionAccessor, vars plugincel.OptionalVariableDeclarations, field string) compiledExpr {
	text := acc.GetExpression()
	res, shared := c.fc.compile(kind, acc, vars, c.envType)
	ce := compiledExpr{field: field, text: text, result: res, shared: shared}
	if res.Error == nil && shared != nil {
		ce.fast = shared.fast
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
		c.usesNamespace = c.usesNamespace || nsFull
	}
	return ce
}

// compileShared compiles the variables and matchConditions of a policy.
func (c *exprCompiler) compileShared(cp *compiledPolicy, spec *policySpec) {
	seen := map[string]int{}
	for i, v := range spec.variables {
		ce := c.compile(kindVariable, &validating.Variable{Name: v.Name, Expression: v.Expression}, c.vars,
			fmt.Sprintf("spec.variables[%d].expression", i))
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
	for i := range spec.matchConditions {
		mc := &spec.matchConditions[i]
		cp.matchConditions = append(cp.matchConditions, compiledMatchCondition{
			name: mc.Name,
			expr: c.compile(kindMatchCondition, (*matchconditions.MatchCondition)(mc), c.vars, fmt.Sprintf("spec.matchConditions[%d].expression", i)),
		})
	}
	for i := range cp.matchConditions {
		cp.matchExprs = append(cp.matchExprs, &cp.matchConditions[i].expr)
	}
}

// compileErrors lists the errors of the shared part of a policy of the
// given kind, in field order.
func (cp *compiledPolicy) compileErrors(kind string) []CompileError {
	var out []CompileError
	add := func(field, msg string) {
		out = append(out, CompileError{Kind: kind, Name: cp.name, Field: field, Message: msg})
	}
	if cp.compileErr != nil {
		add("spec", cp.compileErr.Error())
	}
	if err := cp.paramGVKErr(); err != nil {
		add("spec.paramKind.apiVersion", err.Error())
	}
	if cp.noConstraints {
		add("spec.matchConstraints", "Required value")
	} else if cp.match != nil && cp.match.err != nil {
		add("spec.matchConstraints", cp.match.err.Error())
	}
	for _, v := range cp.variables {
		out = appendExprError(out, kind, cp.name, &v.expr)
	}
	for _, m := range cp.matchConditions {
		out = appendExprError(out, kind, cp.name, &m.expr)
	}
	return out
}

func appendExprError(out []CompileError, kind, name string, e *compiledExpr) []CompileError {
	if e.result.Error != nil {
		out = append(out, CompileError{Kind: kind, Name: name, Field: e.field, Message: e.result.Error.Error()})
	}
	return out
}

// newBinding compiles a binding's matchResources and paramRef.
func newBinding(kind string, meta metav1.ObjectMeta, mr *admissionregistrationv1.MatchResources, pr *admissionregistrationv1.ParamRef) (*compiledBinding, []CompileError) {
	name := meta.Name
	cb := &compiledBinding{name: name}
	var errs []CompileError
	sel, err := clusterSelectorOf(meta.Annotations)
	if err != nil {
		// The store refuses such a binding; one stored before that rule
		// fails closed: it applies to no cluster rather than to all.
		sel = labels.Nothing()
		errs = append(errs, CompileError{Kind: kind, Name: name,
			Field: "metadata.annotations[" + ClusterSelectorAnnotation + "]", Message: err.Error()})
	}
	cb.clusterSel = sel
	if mr != nil {
		cb.match, cb.matchErr = compileMatchResources(mr)
		if cb.match != nil && cb.match.err != nil {
			errs = append(errs, CompileError{Kind: kind, Name: name, Field: "spec.matchResources", Message: cb.match.err.Error()})
		}
	}
	if cb.matchErr != nil {
		errs = append(errs, CompileError{Kind: kind, Name: name, Field: "spec.matchResources", Message: cb.matchErr.Error()})
	}
	if pr != nil {
		cb.paramRef = compileParamRef(pr)
		if cb.paramRef.selectorErr != nil {
			errs = append(errs, CompileError{Kind: kind, Name: name, Field: "spec.paramRef.selector", Message: cb.paramRef.selectorErr.Error()})
		}
	}
	return cb, errs
}
