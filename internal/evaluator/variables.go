package evaluator

import (
	"errors"
	"fmt"
	"math"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// variablesType names the lazy "variables" map as the plugin's composition
// does (kubernetes.variables); the variables map only reads the type name.
var variablesType = apiservercel.NewObjectType("kubernetes.variables", nil)

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
// fast interpreter builds the lazy variables map only when cel-go needs it.
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
	key := f.varKey(v, i)
	if r, ok := f.cache[key]; ok {
		f.compositionCost += r.cost
		return r.val
	}
	before := f.compositionCost
	val := f.evalVariable(v)
	f.cache[key] = varResult{val: val, cost: f.compositionCost - before}
	return val
}

// varKey is the key of a cacheable variable's value.
func (f *frame) varKey(v *compiledVariable, i int) varKey {
	key := varKey{share: v.shareKey, policy: -1, variable: -1, request: f.act.request.(ref.Val), ns: f.act.namespace.(ref.Val)}
	if v.shareKey == "" {
		key.policy, key.variable, key.param = f.policy, i, f.param
	}
	return key
}

// variableCompileError is what reading a variable that does not compile
// gives, in the plugin's words; its type tells the cause of the error of
// the expression that read it.
type variableCompileError struct {
	name string
	err  error
}

func (e *variableCompileError) Error() string {
	return fmt.Sprintf("composited variable %q fails to compile: %v", e.name, e.err)
}

// evalCause is the cause of an expression's runtime error.
func evalCause(err error) Cause {
	var vce *variableCompileError
	if errors.As(err, &vce) {
		return CauseCompileError
	}
	return CauseError
}

// evalVariable mirrors variableAccessor.Callback.
func (f *frame) evalVariable(v *compiledVariable) ref.Val {
	res := &v.expr.result
	if res.Error != nil {
		return types.WrapErr(&variableCompileError{name: v.name, err: res.Error})
	}
	prog, perr := v.expr.program()
	if perr != nil {
		return types.NewErr("unexpected internal error compiling variable %q: %v", v.name, perr)
	}
	val, details, err := prog.ContextEval(f.ctx, f.celActivation())
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
		// %w keeps a variableCompileError of a variable this one read.
		return types.NewErr("composited variable %q fails to evaluate: %w", v.name, err)
	}
	return val
}
