package evaluator

import (
	"context"
	"fmt"
	"math"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// variablesType names the lazy "variables" map as the plugin's composition
// does (kubernetes.variables); the variables map only reads the type name.
var variablesType = apiservercel.NewObjectType("kubernetes.variables", nil)

// activation mirrors the plugin's evaluationActivation. The authorizer is
// never bound: using it is a compile error here.
type activation struct {
	object, oldObject, params, request, namespace any
	variables                                     ref.Val
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case plugincel.ObjectVarName:
		return a.object, true
	case plugincel.OldObjectVarName:
		return a.oldObject, true
	case plugincel.ParamsVarName:
		return a.params, true
	case plugincel.RequestVarName:
		return a.request, true
	case plugincel.NamespaceVarName:
		return a.namespace, true
	case plugincel.VariableVarName:
		return a.variables, true
	default:
		return nil, false
	}
}

func (a *activation) Parent() interpreter.Activation { return nil }

// frame is one ForInput of the plugin: one activation, one memo of lazily
// evaluated variables, and the composition cost accumulated by variables
// since the last expression.
type frame struct {
	ctx             context.Context
	act             activation
	compositionCost int64
	trace           *[]ExpressionTrace

	cache  map[varKey]varResult
	policy int
	param  *param

	// fast is set when this request may use the fast path (fast.go).
	rc      *reqCtx
	cp      *compiledPolicy
	fast    bool
	fastVal []any
	fastSt  []uint8 // per variable: 0 not evaluated, 1 fastVal holds it, 2 left to cel-go
}

// varKey identifies a variable's value within one request: the inputs it
// can read (request and namespace values differ between frames) and, for
// variables that read params, the policy and param.
type varKey struct {
	share    string
	policy   int
	variable int
	param    *param
	request  ref.Val
	ns       ref.Val
}

type varResult struct {
	val  ref.Val
	cost int64
}

func (f *frame) bindVariables(cp *compiledPolicy) {
	f.act.variables = newVarMap(f, cp.variables, cp.varIndex)
}

// celActivation is the activation for a cel-go program. A frame on the
// fast path builds the lazy variables map only when cel-go needs it.
func (f *frame) celActivation() *activation {
	if f.act.variables == nil && f.cp != nil {
		f.bindVariables(f.cp)
	}
	return &f.act
}

// variable evaluates a variable once per request where that is
// indistinguishable from evaluating it in every frame: same value, same
// cost charged to the expression that first reads it in this frame.
func (f *frame) variable(v *compiledVariable, i int) ref.Val {
	if !v.cacheable || f.cache == nil {
		return f.evalVariable(v)
	}
	key := varKey{share: v.shareKey, policy: -1, variable: -1, request: f.act.request.(ref.Val), ns: f.act.namespace.(ref.Val)}
	if v.shareKey == "" {
		key.policy, key.variable, key.param = f.policy, i, f.param
	}
	if r, ok := f.cache[key]; ok {
		f.compositionCost += r.cost
		return r.val
	}
	before := f.compositionCost
	val := f.evalVariable(v)
	f.cache[key] = varResult{val: val, cost: f.compositionCost - before}
	return val
}

// evalVariable mirrors variableAccessor.Callback.
func (f *frame) evalVariable(v *compiledVariable) ref.Val {
	res := &v.expr.result
	if res.Error != nil {
		return types.NewErr("composited variable %q fails to compile: %v", v.name, res.Error)
	}
	val, details, err := res.Program.ContextEval(f.ctx, f.celActivation())
	if details == nil {
		return types.NewErr("unable to get evaluation details of variable %q", v.name)
	}
	costPtr := details.ActualCost()
	if costPtr == nil {
		return types.NewErr("unable to calculate cost of variable %q", v.name)
	}
	cost := int64(*costPtr)
	if *costPtr > math.MaxInt64 {
		cost = math.MaxInt64
	}
	f.compositionCost += cost
	if err != nil {
		return types.NewErr("composited variable %q fails to evaluate: %v", v.name, err)
	}
	return val
}

var errOutOfBudget = &apiservercel.Error{
	Type:   apiservercel.ErrorTypeInvalid,
	Detail: "validation failed due to running out of cost budget, no further validation rules will be run",
	Cause:  apiservercel.ErrOutOfBudget,
}

// evaluate mirrors evaluationActivation.Evaluate: same messages, same budget
// arithmetic (variables' cost is charged to the expression that first used
// them).
func (f *frame) evaluate(ce *compiledExpr, remaining int64) (plugincel.EvaluationResult, int64, error) {
	var ev plugincel.EvaluationResult
	if ce == nil {
		return ev, remaining, nil
	}
	ev.ExpressionAccessor = ce.result.ExpressionAccessor
	if ce.result.Error != nil {
		ev.Error = &apiservercel.Error{
			Type:   apiservercel.ErrorTypeInvalid,
			Detail: fmt.Sprintf("compilation error: %v", ce.result.Error),
			Cause:  ce.result.Error,
		}
		f.record(ce, ev, 0)
		return ev, remaining, nil
	}
	if ce.result.Program == nil {
		ev.Error = &apiservercel.Error{
			Type:   apiservercel.ErrorTypeInternal,
			Detail: "unexpected internal error compiling expression",
		}
		return ev, remaining, nil
	}
	if f.fast && ce.fast != nil {
		if v, cost, ok := ce.fast.eval(f); ok {
			if val, ok := fastResult(v); ok {
				return f.fastEvaluated(ev, val, int64(cost), remaining)
			}
		}
	}
	val, details, err := ce.result.Program.ContextEval(f.ctx, f.celActivation())
	compositionCost := f.compositionCost
	f.compositionCost = 0
	if compositionCost > remaining {
		return ev, -1, f.outOfBudget()
	}
	remaining -= compositionCost
	if details == nil {
		return ev, -1, &apiservercel.Error{
			Type:   apiservercel.ErrorTypeInternal,
			Detail: fmt.Sprintf("runtime cost could not be calculated for expression: %v, no further expression will be run", ce.text),
		}
	}
	rtCost := details.ActualCost()
	if rtCost == nil {
		return ev, -1, &apiservercel.Error{
			Type:   apiservercel.ErrorTypeInvalid,
			Detail: fmt.Sprintf("runtime cost could not be calculated for expression: %v, no further expression will be run", ce.text),
			Cause:  apiservercel.ErrOutOfBudget,
		}
	}
	if *rtCost > math.MaxInt64 || int64(*rtCost) > remaining {
		return ev, -1, f.outOfBudget()
	}
	remaining -= int64(*rtCost)
	if err != nil {
		ev.Error = &apiservercel.Error{
			Type:   apiservercel.ErrorTypeInvalid,
			Detail: fmt.Sprintf("expression '%v' resulted in error: %v", ce.text, err),
		}
	} else {
		ev.EvalResult = val
	}
	f.record(ce, ev, int64(*rtCost)+compositionCost)
	return ev, remaining, nil
}

// outOfBudget is the plugin's out-of-budget error. In fast mode the budget
// holds upper bounds, not costs, so the request is evaluated again exactly
// instead (Snapshot.Validate).
func (f *frame) outOfBudget() error {
	if f.fast {
		f.rc.redo = true
	}
	return errOutOfBudget
}

// fastEvaluated finishes evaluate for a fast-path result, with the same
// budget arithmetic on the bound.
func (f *frame) fastEvaluated(ev plugincel.EvaluationResult, val ref.Val, cost, remaining int64) (plugincel.EvaluationResult, int64, error) {
	compositionCost := f.compositionCost
	f.compositionCost = 0
	if compositionCost > remaining {
		return ev, -1, f.outOfBudget()
	}
	remaining -= compositionCost
	if cost > remaining {
		return ev, -1, f.outOfBudget()
	}
	remaining -= cost
	ev.EvalResult = val
	return ev, remaining, nil
}

func (f *frame) fastObject() any {
	if o := f.rc.req.Object; o != nil {
		return o
	}
	return nil
}

func (f *frame) fastOldObject() any {
	if o := f.rc.req.OldObject; o != nil {
		return o
	}
	return nil
}

// fastParams is params as the fast path reads it: null without a param,
// the decoded map when cel-go reads that same map.
func (f *frame) fastParams() (any, bool) {
	if f.param == nil {
		return nil, true
	}
	if f.param.native == nil {
		return nil, false
	}
	return f.param.native, true
}

func (f *frame) cancelled() bool { return f.ctx.Err() != nil }

func (f *frame) fxStack() *fxStack { return &f.rc.fxs }

// fastVariable is the fast path's read of variables.<name>: memoised per
// frame like the lazy map, shared across policies like variable, and
// charged to the composition cost like evalVariable, with its bound.
func (f *frame) fastVariable(name string) (any, bool) {
	i, ok := f.cp.varIndex[name]
	if !ok {
		return nil, false
	}
	if f.fastSt == nil {
		f.fastVal = make([]any, len(f.cp.variables))
		f.fastSt = make([]uint8, len(f.cp.variables))
	}
	switch f.fastSt[i] {
	case 1:
		return f.fastVal[i], true
	case 2:
		return nil, false
	}
	f.fastSt[i] = 2 // also guards against a cycle
	v := &f.cp.variables[i]
	if v.expr.fast == nil || v.expr.result.Error != nil {
		return nil, false
	}
	var key varKey
	if v.cacheable {
		key = varKey{share: v.shareKey, policy: -1, variable: -1, request: f.act.request.(ref.Val), ns: f.act.namespace.(ref.Val)}
		if v.shareKey == "" {
			key.policy, key.variable, key.param = f.policy, i, f.param
		}
		if r, ok := f.rc.fastVars[key]; ok {
			f.compositionCost += r.cost
			f.fastSt[i], f.fastVal[i] = 1, r.val
			return r.val, true
		}
	}
	val, cost, ok := v.expr.fast.eval(f)
	if !ok {
		return nil, false
	}
	f.compositionCost += int64(cost)
	if v.cacheable {
		if f.rc.fastVars == nil {
			f.rc.fastVars = make(map[varKey]fastVarResult, 8)
		}
		f.rc.fastVars[key] = fastVarResult{val: val, cost: int64(cost)}
	}
	f.fastSt[i], f.fastVal[i] = 1, val
	return val, true
}

type fastVarResult struct {
	val  any
	cost int64
}

func (f *frame) record(ce *compiledExpr, ev plugincel.EvaluationResult, cost int64) {
	if f.trace == nil {
		return
	}
	t := ExpressionTrace{Expression: ce.text, Cost: cost}
	if ev.Error != nil {
		t.Error = ev.Error.Error()
	} else if ev.EvalResult != nil {
		t.Result = fmt.Sprint(ev.EvalResult.Value())
	}
	*f.trace = append(*f.trace, t)
}

// forInput mirrors condition.ForInput on a fresh frame.
func (f *frame) forInput(exprs []*compiledExpr, budget int64) ([]plugincel.EvaluationResult, int64, error) {
	evaluations := make([]plugincel.EvaluationResult, len(exprs))
	remaining := budget
	var err error
	for i, ce := range exprs {
		evaluations[i], remaining, err = f.evaluate(ce, remaining)
		if err != nil {
			return nil, -1, err
		}
	}
	return evaluations, remaining, nil
}
