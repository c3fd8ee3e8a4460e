// Package fastcel evaluates the common subset of CEL directly over decoded
// JSON (map[string]any, []any, string, int64, float64, bool, nil), without
// cel-go's interpreter and its step-by-step cost tracker, which together are
// most of the time of a policy evaluation.
//
// It is exact by construction, not by imitation:
//
//   - It only ever answers with a plain success value (a bool, string, null,
//     int or double). Whenever it meets anything else (an error, a type it
//     does not handle the way cel-go does, a map to iterate, a cancelled
//     context), it declines the expression, and the caller evaluates it
//     with its cel-go program, whose result and cost are then used.
//     Evaluation is pure, so doing it twice cannot be observed.
//   - It calls the overload the type checker chose, as cel-go's program
//     does: Compile checks the expression and, where the checker chose
//     one overload, a value of another type than its parameters' declines
//     (overloads.go), where dispatching by the run-time type would give a
//     value cel-go does not.
//   - Instead of the exact runtime cost it computes an upper bound: every
//     node it evaluates is charged at least what cel-go's cost tracker
//     charges for it (runtimecost.go costCall and Observe, and the
//     apiserver's library estimator for the functions used here), and it
//     evaluates the same nodes cel-go evaluates (the same short-circuits).
//     A result is given only when its bound is well below the
//     per-expression limit, so it could never have been a cost-limit error
//     in cel-go. A caller that checks a budget against the bounds must
//     leave any check that fails to exact costs.
//
// The expressions it takes: literals; object, oldObject, params and
// variables.<name> (request, namespaceObject and authorizer are left to
// cel-go); field selection, indexing and has(); list and map literals;
// ! && || ?: == != < <= > >= + - * in and unary minus on the kinds where
// CEL's semantics are Go's; size, startsWith, endsWith, contains, join and
// matches with a constant pattern; the comprehensions of all, exists,
// exists_one, map and filter over lists; optional.of, optional.none, .?f,
// [?i], orValue, hasValue and value. Anything else is declined when it is
// compiled (Compile returns nil) or when it is evaluated.
//
// TestMatchesCEL holds every supported construct to cel-go's value and cost
// on generated inputs.
package fastcel

import (
	"errors"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// costCeiling is the largest bound the interpreter accepts for one
// expression: well below the per-expression limit (1e6), so that a result
// it gives could never have been a cost-limit error in cel-go. Loops check
// it at every step, so that an expression too costly for the interpreter
// stops as early as cel-go's own limit would stop it, instead of building
// everything first.
const costCeiling = 100_000

// qualifierCost is charged for each field selection and index. cel-go
// charges 1 when the operand is a variable's attribute (object.spec), but
// 2 when it is any other expression ([a, b][0], (c ? x : y).f): the
// operand becomes a relative attribute of its own.
const qualifierCost = 2

// explicitNull: a field or key present with a JSON null makes every read
// of it decline. The apiserver hands a built-in kind to CEL typed, where
// a null pointer is an absent field (has() false, 'k' in m false), while
// a custom resource's JSON keeps the key (has() true): only cel-go, which
// gets the right view, can answer. An apiserver rarely sends a null
// (creationTimestamp of a new object is one); hand-written reviews do.

type node func(x *fx) (any, bool)

// Program is one expression compiled for the interpreter. It is immutable
// and safe for concurrent use.
type Program struct {
	root  node
	slots int
	loops bool // has a comprehension: checks the context
}

// fx is the state of one evaluation.
type fx struct {
	cost  uint64
	slots []any
	env   Env
	iters int
}

// Env supplies the inputs of one evaluation.
type Env interface {
	// Object and OldObject are the decoded objects, nil when absent.
	Object() any
	OldObject() any
	// Params is the decoded param, nil when there is none; ok is false
	// when params is not plain JSON (then the expression is declined).
	Params() (v any, ok bool)
	// Variable is the value of variables.<name>; ok is false when the
	// variable's value is not available to the interpreter.
	Variable(name string) (v any, ok bool)
	// Cancelled reports whether the evaluation should stop.
	Cancelled() bool
	// Stack recycles evaluation states; one per request is enough.
	Stack() *Stack
}

var errUnsupported = errors.New("not supported by the fast interpreter")

// Compile compiles an expression that has already compiled in the
// apiserver's environment, type-checking it again in env (CheckEnv of
// that environment), whose checker chooses the overloads the program
// calls (overloads.go). It returns nil when the expression uses anything
// the interpreter does not support.
func Compile(env *cel.Env, text string) *Program {
	ast, iss := env.Compile(text)
	if iss.Err() != nil {
		return nil
	}
	c := &compiler{env: env, refs: ast.NativeRep().ReferenceMap()}
	root, err := c.expr(ast.NativeRep().Expr())
	if err != nil {
		return nil
	}
	return &Program{root: root, slots: c.maxSlots, loops: c.loops}
}

// Eval runs the program. When ok, v is the value (convert it with Value)
// and cost an upper bound of cel-go's runtime cost for it; when not, the
// interpreter declined and the caller must evaluate the expression with
// cel-go.
func (p *Program) Eval(env Env) (v any, cost uint64, ok bool) {
	if p.loops && env.Cancelled() {
		return nil, 0, false
	}
	st := env.Stack()
	x := st.acquire(env, p.slots)
	v, ok = p.root(x)
	cost = x.cost
	st.release(x)
	if !ok || cost > costCeiling {
		return nil, 0, false
	}
	return v, cost, true
}

// Stack recycles evaluation states within one request; evaluations nest
// (a variable is evaluated inside the expression that reads it). The zero
// value is ready to use; it is not safe for concurrent use.
type Stack struct{ free []*fx }

func (s *Stack) acquire(env Env, slots int) *fx {
	var x *fx
	if n := len(s.free); n > 0 {
		x = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		x = &fx{}
	}
	if cap(x.slots) < slots {
		x.slots = make([]any, slots)
	}
	x.slots = x.slots[:slots]
	x.env, x.cost, x.iters = env, 0, 0
	return x
}

func (s *Stack) release(x *fx) {
	clear(x.slots)
	x.env = nil
	s.free = append(s.free, x)
}

// Value converts a result of Eval to the CEL value the cel-go program
// would have returned; ok is false for kinds the interpreter leaves to
// cel-go (lists, maps, optionals).
func Value(v any) (ref.Val, bool) {
	switch v := v.(type) {
	case bool:
		return types.Bool(v), true
	case string:
		return types.String(v), true
	case nil:
		return types.NullValue, true
	case int64:
		return types.Int(v), true
	case float64:
		return types.Double(v), true
	}
	return nil, false
}

// evalAs evaluates n and requires a value of type T; ok is false when the
// interpreter declined or the value is of another type.
func evalAs[T any](n node, x *fx) (T, bool) {
	v, ok := n(x)
	if !ok {
		var zero T
		return zero, false
	}
	t, ok := v.(T)
	return t, ok
}
