package evaluator

import (
	"context"
	"fmt"
	"math"

	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/portcullis-dev/portcullis/internal/evaluator/fastcel"
)

// activation mirrors the plugin's evaluationActivation. The authorizer is
// never bound: using it is a compile error here.
type activation struct {
	object, oldObject, params, request, namespace any
	variables                                     ref.Val
	// typed is set for a built-in kind: object and oldObject are then its
	// typed view, decoded on first read (typed.go).
	typed *reqCtx
	// paths is what the policy reads of object and oldObject when they
	// are a *lazyTyped (mutfast_paths.go); nil for all of them.
	paths *typedPaths
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case plugincel.ObjectVarName:
		if a.typed != nil {
			return a.typed.typedValue(false), true
		}
		if l, ok := a.object.(*lazyTyped); ok {
			if a.paths == nil {
				return l.value(), true
			}
			return l.typedValue(&a.paths.object), true
		}
		return a.object, true
	case plugincel.OldObjectVarName:
		if a.typed != nil {
			return a.typed.typedValue(true), true
		}
		if l, ok := a.oldObject.(*lazyTyped); ok {
			if a.paths == nil {
				return l.value(), true
			}
			return l.typedValue(&a.paths.oldObject), true
		}
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
	trace           *exprTracer

	cache  map[varKey]varResult
	policy int
	param  *param

	rc *reqCtx
	cp *compiledPolicy
	// fast is set when the fast interpreter may answer (fastenv.go).
	fast    bool
	fastVal []any
	fastSt  []uint8 // per variable: 0 not evaluated, 1 fastVal holds it, 2 left to cel-go
}

// exprResult is one expression's evaluation, as the plugin's
// EvaluationResult has it, with the cause of its error.
type exprResult struct {
	val   ref.Val
	err   error
	cause Cause
}

var errOutOfBudget = &apiservercel.Error{
	Type:   apiservercel.ErrorTypeInvalid,
	Detail: "validation failed due to running out of cost budget, no further validation rules will be run",
	Cause:  apiservercel.ErrOutOfBudget,
}

// evaluate mirrors evaluationActivation.Evaluate: same messages, same budget
// arithmetic (variables' cost is charged to the expression that first used
// them).
func (f *frame) evaluate(ce *compiledExpr, remaining int64) (exprResult, int64, error) {
	var r exprResult
	if ce == nil {
		return r, remaining, nil
	}
	if ce.result.Error != nil {
		r.err = &apiservercel.Error{
			Type:   apiservercel.ErrorTypeInvalid,
			Detail: fmt.Sprintf("compilation error: %v", ce.result.Error),
			Cause:  ce.result.Error,
		}
		r.cause = CauseCompileError
		f.trace.add(ce, r, 0)
		return r, remaining, nil
	}
	if f.fast && ce.fast != nil {
		if v, cost, ok := ce.fast.Eval((*fastEnv)(f)); ok {
			if val, ok := fastcel.Value(v); ok {
				return f.fastEvaluated(val, int64(cost), remaining)
			}
		}
	}
	prog, perr := ce.program()
	if perr != nil {
		r.err = &apiservercel.Error{
			Type:   apiservercel.ErrorTypeInternal,
			Detail: "unexpected internal error compiling expression",
		}
		r.cause = CauseError
		return r, remaining, nil
	}
	val, details, err := prog.ContextEval(f.ctx, f.celActivation())
	compositionCost := f.compositionCost
	f.compositionCost = 0
	if compositionCost > remaining {
		return r, -1, f.outOfBudget()
	}
	remaining -= compositionCost
	if details == nil {
		return r, -1, &apiservercel.Error{
			Type:   apiservercel.ErrorTypeInternal,
			Detail: fmt.Sprintf("runtime cost could not be calculated for expression: %v, no further expression will be run", ce.text),
		}
	}
	rtCost := details.ActualCost()
	if rtCost == nil {
		return r, -1, &apiservercel.Error{
			Type:   apiservercel.ErrorTypeInvalid,
			Detail: fmt.Sprintf("runtime cost could not be calculated for expression: %v, no further expression will be run", ce.text),
			Cause:  apiservercel.ErrOutOfBudget,
		}
	}
	if *rtCost > math.MaxInt64 || int64(*rtCost) > remaining {
		return r, -1, f.outOfBudget()
	}
	remaining -= int64(*rtCost)
	if err != nil {
		r.err = &apiservercel.Error{
			Type:   apiservercel.ErrorTypeInvalid,
			Detail: fmt.Sprintf("expression '%v' resulted in error: %v", ce.text, err),
		}
		r.cause = evalCause(err)
	} else {
		r.val = val
	}
	f.trace.add(ce, r, int64(*rtCost)+compositionCost)
	return r, remaining, nil
}

// forInput mirrors condition.ForInput on a fresh frame.
func (f *frame) forInput(exprs []*compiledExpr, budget int64) ([]exprResult, int64, error) {
	if len(exprs) > 0 {
		if err := f.prepareObjects(); err != nil {
			return nil, -1, err
		}
	}
	evaluations := make([]exprResult, len(exprs))
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
