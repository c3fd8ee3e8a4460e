package evaluator

import (
	"errors"
	"math"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
)

// The fast path evaluates the common subset of CEL directly over the
// decoded JSON (map[string]any, []any, string, int64, float64, bool, nil),
// without cel-go's interpreter and its step-by-step cost tracker, which
// together are most of the time of a policy evaluation.
//
// It is exact by construction, not by imitation:
//
//   - It only ever answers with a plain success value (a bool, string, null,
//     int or double). Whenever it meets anything else (an error, a type it
//     does not handle the way cel-go does, a map to iterate, a cancelled
//     context), it gives up on that expression, and the expression is
//     evaluated again by its cel-go program, whose result and cost are then
//     used. Evaluation is pure, so doing it twice cannot be observed.
//   - Instead of the exact runtime cost it computes an upper bound: every
//     node it evaluates is charged at least what cel-go's cost tracker
//     charges for it (runtimecost.go costCall and Observe, and the
//     apiserver's library estimator for the functions used here), and it
//     evaluates the same nodes cel-go evaluates (the same short-circuits).
//     A result is used only when its bound is well below the per-expression
//     limit. The per-evaluation budget is checked against the bounds; when a
//     bound-based check would fail, the whole request is evaluated again
//     exactly (reqCtx.redo), so the apiserver's out-of-budget errors and
//     their wording come only from exact costs.
//
// TestFastMatchesCEL holds every supported construct to cel-go's value and
// cost on generated inputs.

// fastCostCeiling is the largest bound the fast path accepts for one
// expression: well below the per-expression limit (1e6), so that a result
// it gives could never have been a cost-limit error in cel-go. Loops check
// it at every step, so that an expression too costly for the fast path
// stops as early as cel-go's own limit would stop it, instead of building
// everything first.
const fastCostCeiling = 100_000

// qualifierCost is charged for each field selection and index. cel-go
// charges 1 when the operand is a variable's attribute (object.spec), but
// 2 when it is any other expression ([a, b][0], (c ? x : y).f): the
// operand becomes a relative attribute of its own.
const qualifierCost = 2

type fnode func(x *fx) (any, bool)

// fastProgram is one expression compiled for the fast path.
type fastProgram struct {
	root  fnode
	slots int
	loops bool // has a comprehension: checks the context
}

// fx is the state of one fast evaluation.
type fx struct {
	cost  uint64
	slots []any
	env   fastEnv
	iters int
}

// fastEnv supplies the inputs: the decoded object and oldObject, and the
// values of the policy's variables.
type fastEnv interface {
	fastObject() any
	fastOldObject() any
	fastParams() (any, bool) // ok is false when params is not plain JSON
	fastVariable(name string) (any, bool)
	cancelled() bool
	fxStack() *fxStack
}

type optional struct {
	v   any
	has bool
}

var noneValue = &optional{}

var errUnsupported = errors.New("not supported by the fast path")

// compileFast compiles an expression that has already compiled in the
// apiserver's environment. It returns nil when the expression uses anything
// the fast path does not support.
func compileFast(env *cel.Env, text string) *fastProgram {
	ast, iss := env.Parse(text)
	if iss.Err() != nil {
		return nil
	}
	c := &fastCompiler{}
	root, err := c.expr(ast.NativeRep().Expr())
	if err != nil {
		return nil
	}
	return &fastProgram{root: root, slots: c.maxSlots, loops: c.loops}
}

// eval runs the program. ok is false when the fast path gave up.
func (p *fastProgram) eval(env fastEnv) (any, uint64, bool) {
	if p.loops && env.cancelled() {
		return nil, 0, false
	}
	st := env.fxStack()
	x := st.acquire(env, p.slots)
	v, ok := p.root(x)
	cost := x.cost
	st.release(x)
	if !ok || cost > fastCostCeiling {
		return nil, 0, false
	}
	return v, cost, true
}

// fxStack recycles evaluation states within one request; evaluations nest
// (a variable is evaluated inside the expression that reads it).
type fxStack struct{ free []*fx }

func (s *fxStack) acquire(env fastEnv, slots int) *fx {
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

func (s *fxStack) release(x *fx) {
	clear(x.slots)
	x.env = nil
	s.free = append(s.free, x)
}

// fastResult converts a fast result to the CEL value the cel-go program
// would have returned; ok is false for kinds the fast path leaves to cel-go.
func fastResult(v any) (ref.Val, bool) {
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

type fastCompiler struct {
	scope    []string // comprehension variables in scope, innermost last; index = slot
	maxSlots int
	loops    bool
}

func (c *fastCompiler) lookup(name string) int {
	for i := len(c.scope) - 1; i >= 0; i-- {
		if c.scope[i] == name {
			return i
		}
	}
	return -1
}

func (c *fastCompiler) exprs(es []celast.Expr) ([]fnode, error) {
	out := make([]fnode, len(es))
	for i, e := range es {
		n, err := c.expr(e)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

func (c *fastCompiler) expr(e celast.Expr) (fnode, error) {
	switch e.Kind() {
	case celast.LiteralKind:
		return literal(e.AsLiteral())
	case celast.IdentKind:
		return c.ident(e.AsIdent())
	case celast.SelectKind:
		return c.selectExpr(e.AsSelect())
	case celast.CallKind:
		if w, isChain, err := c.optChain(e); err != nil || isChain {
			if err != nil {
				return nil, err
			}
			return optValue(w), nil
		}
		return c.call(e.AsCall())
	case celast.ListKind:
		return c.list(e.AsList())
	case celast.MapKind:
		return c.mapExpr(e.AsMap())
	case celast.ComprehensionKind:
		return c.comprehension(e.AsComprehension())
	}
	return nil, errUnsupported
}

func literal(v ref.Val) (fnode, error) {
	var native any
	switch v := v.(type) {
	case types.Bool:
		native = bool(v)
	case types.Int:
		native = int64(v)
	case types.Double:
		native = float64(v)
	case types.String:
		native = string(v)
	case types.Null:
		native = nil
	default:
		return nil, errUnsupported
	}
	// Constants cost nothing in cel-go.
	return func(*fx) (any, bool) { return native, true }, nil
}

func (c *fastCompiler) ident(name string) (fnode, error) {
	// Every identifier is an attribute resolution: SelectAndIdentCost (1).
	if slot := c.lookup(name); slot >= 0 {
		return func(x *fx) (any, bool) { x.cost++; return x.slots[slot], true }, nil
	}
	switch name {
	case plugincel.ObjectVarName:
		return func(x *fx) (any, bool) { x.cost++; return x.env.fastObject(), true }, nil
	case plugincel.OldObjectVarName:
		return func(x *fx) (any, bool) { x.cost++; return x.env.fastOldObject(), true }, nil
	case plugincel.ParamsVarName:
		return func(x *fx) (any, bool) { x.cost++; return x.env.fastParams() }, nil
	}
	// request, namespaceObject, authorizer and anything else are left to
	// cel-go: the apiserver hands them to CEL as reflective values of typed
	// objects, whose semantics are theirs.
	return nil, errUnsupported
}

func (c *fastCompiler) selectExpr(s celast.SelectExpr) (fnode, error) {
	field := s.FieldName()
	op := s.Operand()
	if op.Kind() == celast.IdentKind && op.AsIdent() == plugincel.VariableVarName && c.lookup(plugincel.VariableVarName) < 0 {
		if s.IsTestOnly() {
			return nil, errUnsupported
		}
		// "variables" and its field: two attribute steps; the variable's
		// own cost is composition cost, charged by the environment.
		return func(x *fx) (any, bool) {
			x.cost += 2
			return x.env.fastVariable(field)
		}, nil
	}
	operand, err := c.expr(op)
	if err != nil {
		return nil, err
	}
	testOnly := s.IsTestOnly() // has(a.f)
	return func(x *fx) (any, bool) {
		m, ok := evalAs[map[string]any](operand, x)
		if !ok {
			return nil, false
		}
		x.cost += qualifierCost
		fv, found := m[field]
		if testOnly {
			return found, true
		}
		return fv, found
	}, nil
}

func (c *fastCompiler) list(l celast.ListExpr) (fnode, error) {
	if len(l.OptionalIndices()) > 0 {
		return nil, errUnsupported
	}
	elems, err := c.exprs(l.Elements())
	if err != nil {
		return nil, err
	}
	if allLiterals(l.Elements()) {
		// Built once: fast-path values are never modified. cel-go still
		// charges ListCreateBaseCost.
		constant := make([]any, len(elems))
		for i, el := range elems {
			constant[i], _ = el(nil)
		}
		return func(x *fx) (any, bool) { x.cost += 10; return constant, true }, nil
	}
	return func(x *fx) (any, bool) {
		out := make([]any, len(elems))
		for i, el := range elems {
			v, ok := el(x)
			if !ok {
				return nil, false
			}
			out[i] = v
		}
		x.cost += 10 // ListCreateBaseCost
		return out, true
	}, nil
}

func allLiterals(es []celast.Expr) bool {
	for _, e := range es {
		if e.Kind() != celast.LiteralKind {
			return false
		}
	}
	return true
}

func (c *fastCompiler) mapExpr(m celast.MapExpr) (fnode, error) {
	type entry struct{ k, v fnode }
	var entries []entry
	for _, en := range m.Entries() {
		if en.Kind() != celast.MapEntryKind {
			return nil, errUnsupported
		}
		me := en.AsMapEntry()
		if me.IsOptional() {
			return nil, errUnsupported
		}
		k, err := c.expr(me.Key())
		if err != nil {
			return nil, err
		}
		v, err := c.expr(me.Value())
		if err != nil {
			return nil, err
		}
		entries = append(entries, entry{k, v})
	}
	if len(entries) == 0 {
		empty := map[string]any{}
		return func(x *fx) (any, bool) { x.cost += 30; return empty, true }, nil
	}
	return func(x *fx) (any, bool) {
		out := make(map[string]any, len(entries))
		for _, en := range entries {
			k, ok := en.k(x)
			if !ok {
				return nil, false
			}
			ks, isString := k.(string)
			if !isString {
				return nil, false
			}
			if _, dup := out[ks]; dup {
				return nil, false // cel-go reports the duplicate key
			}
			v, ok := en.v(x)
			if !ok {
				return nil, false
			}
			out[ks] = v
		}
		x.cost += 30 // MapCreateBaseCost
		return out, true
	}, nil
}

func (c *fastCompiler) comprehension(ce celast.ComprehensionExpr) (fnode, error) {
	if ce.HasIterVar2() {
		return nil, errUnsupported
	}
	c.loops = true
	iterRange, err := c.expr(ce.IterRange())
	if err != nil {
		return nil, err
	}
	base := len(c.scope)
	c.maxSlots = max(c.maxSlots, base+2) // the accumulator, then the iteration variable
	build, err := c.listBuilder(ce, base)
	if err == nil && build == nil {
		build, err = c.fold(ce, base)
	}
	if err != nil {
		return nil, err
	}
	return func(x *fx) (any, bool) {
		// Only lists: a map's iteration order is not fixed, and with it
		// which elements cel-go evaluates.
		items, ok := evalAs[[]any](iterRange, x)
		if !ok {
			return nil, false
		}
		return build(x, items)
	}, nil
}

// fold is any comprehension over a list, step by step as cel-go runs it.
func (c *fastCompiler) fold(ce celast.ComprehensionExpr, base int) (func(*fx, []any) (any, bool), error) {
	accuInit, err := c.expr(ce.AccuInit())
	if err != nil {
		return nil, err
	}
	accuSlot, iterSlot := base, base+1
	c.scope = append(c.scope, ce.AccuVar())
	defer func() { c.scope = c.scope[:base] }()
	// The result sees the accumulator but not the iteration variable.
	result, err := c.expr(ce.Result())
	if err != nil {
		return nil, err
	}
	c.scope = append(c.scope, ce.IterVar())
	cond, err := c.expr(ce.LoopCondition())
	if err != nil {
		return nil, err
	}
	step, err := c.expr(ce.LoopStep())
	if err != nil {
		return nil, err
	}
	return func(x *fx, items []any) (any, bool) {
		accu, ok := accuInit(x)
		if !ok {
			return nil, false
		}
		x.slots[accuSlot] = accu
		for _, it := range items {
			if !x.tick() {
				return nil, false
			}
			x.slots[iterSlot] = it
			more, ok := evalAs[bool](cond, x)
			if !ok {
				return nil, false
			}
			if !more {
				break
			}
			if x.slots[accuSlot], ok = step(x); !ok || x.cost > fastCostCeiling {
				return nil, false
			}
		}
		x.slots[iterSlot] = nil
		return result(x)
	}, nil
}

// tick counts one loop step; it is false when the request was cancelled
// (checked every 100 steps, as cel-go's interrupt check does).
func (x *fx) tick() bool {
	x.iters++
	return x.iters%100 != 0 || !x.env.cancelled()
}

// evalAs evaluates n and requires a value of type T; ok is false when the
// fast path gave up or the value is of another type.
func evalAs[T any](n fnode, x *fx) (T, bool) {
	v, ok := n(x)
	if !ok {
		var zero T
		return zero, false
	}
	t, ok := v.(T)
	return t, ok
}

// listBuilder recognises the expansions of the map and filter macros,
//
//	step: @result + [e]                     (l.map(v, e))
//	step: p ? @result + [e] : @result       (l.filter(v, p), l.map(v, p, e))
//
// with an empty list as init, true as condition and @result as result, and
// builds the result by appending instead of copying the accumulator at
// every step. It charges what evaluating those steps node by node charges.
func (c *fastCompiler) listBuilder(ce celast.ComprehensionExpr, base int) (func(*fx, []any) (any, bool), error) {
	accu := ce.AccuVar()
	isAccu := func(e celast.Expr) bool { return e.Kind() == celast.IdentKind && e.AsIdent() == accu }
	appendOf := func(e celast.Expr) celast.Expr { // e is @result + [x]: x
		if e.Kind() != celast.CallKind || e.AsCall().FunctionName() != operators.Add || e.AsCall().IsMemberFunction() {
			return nil
		}
		args := e.AsCall().Args()
		if len(args) != 2 || !isAccu(args[0]) || args[1].Kind() != celast.ListKind {
			return nil
		}
		l := args[1].AsList()
		if len(l.Elements()) != 1 || len(l.OptionalIndices()) != 0 {
			return nil
		}
		return l.Elements()[0]
	}
	// Only the hidden accumulator: a user's expression cannot name it.
	if !strings.HasPrefix(accu, "@") || !isAccu(ce.Result()) || ce.AccuInit().Kind() != celast.ListKind ||
		len(ce.AccuInit().AsList().Elements()) != 0 || ce.LoopCondition().Kind() != celast.LiteralKind ||
		ce.LoopCondition().AsLiteral() != types.True {
		return nil, nil
	}
	step := ce.LoopStep()
	var predExpr, elemExpr celast.Expr
	if elemExpr = appendOf(step); elemExpr == nil {
		if step.Kind() != celast.CallKind || step.AsCall().FunctionName() != operators.Conditional {
			return nil, nil
		}
		args := step.AsCall().Args()
		if len(args) != 3 || !isAccu(args[2]) {
			return nil, nil
		}
		if elemExpr = appendOf(args[1]); elemExpr == nil {
			return nil, nil
		}
		predExpr = args[0]
	}
	c.scope = append(c.scope, accu, ce.IterVar())
	defer func() { c.scope = c.scope[:base] }()
	iterSlot := base + 1
	elem, err := c.expr(elemExpr)
	if err != nil {
		return nil, err
	}
	var pred fnode
	if predExpr != nil {
		if pred, err = c.expr(predExpr); err != nil {
			return nil, err
		}
	}
	return func(x *fx, items []any) (any, bool) {
		x.cost += 10 // the empty init list
		var out []any
		for _, it := range items {
			if !x.tick() {
				return nil, false
			}
			x.slots[iterSlot] = it
			if pred != nil {
				keep, ok := evalAs[bool](pred, x)
				if !ok {
					return nil, false
				}
				x.cost++ // the conditional
				if !keep {
					if x.cost++; x.cost > fastCostCeiling { // @result
						return nil, false
					}
					continue
				}
			}
			v, ok := elem(x)
			if !ok {
				return nil, false
			}
			x.cost += 1 + 10 + 1 // @result, the one-element list, the concatenation
			if x.cost > fastCostCeiling {
				return nil, false
			}
			out = append(out, v)
		}
		x.slots[iterSlot] = nil
		x.cost++ // the result, @result
		if out == nil {
			out = []any{}
		}
		return out, true
	}, nil
}

func (c *fastCompiler) call(call celast.CallExpr) (fnode, error) {
	fn := call.FunctionName()
	if call.IsMemberFunction() {
		t := call.Target()
		if t.Kind() == celast.IdentKind && t.AsIdent() == "optional" && c.lookup("optional") < 0 {
			return c.optionalCall(fn, call.Args())
		}
		nargs := len(call.Args())
		if fn == "orValue" && nargs == 1 || (fn == "hasValue" || fn == "value") && nargs == 0 {
			w, isChain, err := c.optChain(t)
			if err != nil {
				return nil, err
			}
			if !isChain {
				target, err := c.expr(t)
				if err != nil {
					return nil, err
				}
				w = optionalOf(target)
			}
			return c.optionalMember(fn, w, call.Args())
		}
		target, err := c.expr(t)
		if err != nil {
			return nil, err
		}
		if fn == "matches" {
			return matchesConst(target, call.Args())
		}
		args, err := c.exprs(call.Args())
		if err != nil {
			return nil, err
		}
		return memberCall(fn, target, args)
	}
	switch fn {
	case "matches":
		args := call.Args()
		if len(args) != 2 {
			return nil, errUnsupported
		}
		target, err := c.expr(args[0])
		if err != nil {
			return nil, err
		}
		return matchesConst(target, args[1:])
	}
	args, err := c.exprs(call.Args())
	if err != nil {
		return nil, err
	}
	return globalCall(fn, args)
}

func (c *fastCompiler) optionalCall(fn string, argExprs []celast.Expr) (fnode, error) {
	args, err := c.exprs(argExprs)
	if err != nil {
		return nil, err
	}
	switch {
	case fn == "none" && len(args) == 0:
		return func(x *fx) (any, bool) { x.cost++; return noneValue, true }, nil
	case fn == "of" && len(args) == 1:
		a := args[0]
		return func(x *fx) (any, bool) {
			v, ok := a(x)
			if !ok {
				return nil, false
			}
			x.cost++
			return &optional{v: v, has: true}, true
		}, nil
	}
	return nil, errUnsupported
}

// optWalker evaluates an optional chain (a.?b[?c].?d) without building
// the intermediate optionals: has is false for optional.none().
type optWalker func(x *fx) (v any, has, ok bool)

// optChain compiles e as an optional chain when it is one.
func (c *fastCompiler) optChain(e celast.Expr) (optWalker, bool, error) {
	if e.Kind() != celast.CallKind {
		return nil, false, nil
	}
	call := e.AsCall()
	args := call.Args()
	if call.IsMemberFunction() || len(args) != 2 {
		return nil, false, nil
	}
	switch call.FunctionName() {
	case operators.OptSelect:
		if args[1].Kind() != celast.LiteralKind {
			return nil, false, errUnsupported
		}
		field, isString := args[1].AsLiteral().(types.String)
		if !isString {
			return nil, false, errUnsupported
		}
		inner, err := c.optBase(args[0])
		if err != nil {
			return nil, false, err
		}
		return optSelectStep(inner, string(field)), true, nil
	case operators.OptIndex:
		inner, err := c.optBase(args[0])
		if err != nil {
			return nil, false, err
		}
		key, err := c.expr(args[1])
		if err != nil {
			return nil, false, err
		}
		return optIndexStep(inner, key), true, nil
	}
	return nil, false, nil
}

// optBase is the operand of an optional step: another step, or any
// expression, whose optional value is unwrapped and whose plain value is
// present.
func (c *fastCompiler) optBase(e celast.Expr) (optWalker, error) {
	w, isChain, err := c.optChain(e)
	if err != nil || isChain {
		return w, err
	}
	n, err := c.expr(e)
	if err != nil {
		return nil, err
	}
	return func(x *fx) (any, bool, bool) {
		v, ok := n(x)
		if !ok {
			return nil, false, false
		}
		if o, isOpt := v.(*optional); isOpt {
			return o.v, o.has, true
		}
		return v, true, true
	}, nil
}

// optionalOf reads an expression that must yield an optional value (cel-go
// has no such overload for anything else).
func optionalOf(target fnode) optWalker {
	return func(x *fx) (any, bool, bool) {
		o, ok := evalAs[*optional](target, x)
		if !ok {
			return nil, false, false
		}
		return o.v, o.has, true
	}
}

// optionalMember is orValue, hasValue or value on an optional value or
// chain.
func (c *fastCompiler) optionalMember(fn string, w optWalker, argExprs []celast.Expr) (fnode, error) {
	switch fn {
	case "orValue":
		alt, err := c.expr(argExprs[0])
		if err != nil {
			return nil, err
		}
		return func(x *fx) (any, bool) {
			v, has, ok := w(x)
			if !ok {
				return nil, false
			}
			x.cost++ // cel-go charges nothing; an upper bound may charge more
			if has {
				return v, true
			}
			return alt(x)
		}, nil
	case "hasValue":
		return func(x *fx) (any, bool) {
			_, has, ok := w(x)
			x.cost++
			return has, ok
		}, nil
	}
	return func(x *fx) (any, bool) { // value
		v, has, ok := w(x)
		x.cost++
		return v, ok && has
	}, nil
}

func optSelectStep(inner optWalker, field string) optWalker {
	return func(x *fx) (any, bool, bool) {
		v, has, ok := inner(x)
		if !ok {
			return nil, false, false
		}
		x.cost += qualifierCost
		if !has {
			return nil, false, true
		}
		m, isMap := v.(map[string]any)
		if !isMap {
			return nil, false, false
		}
		fv, found := m[field]
		return fv, found, true
	}
}

func optIndexStep(inner optWalker, key fnode) optWalker {
	return func(x *fx) (any, bool, bool) {
		v, has, ok := inner(x)
		if !ok {
			return nil, false, false
		}
		k, ok := key(x)
		if !ok {
			return nil, false, false
		}
		x.cost += qualifierCost
		if !has {
			return nil, false, true
		}
		switch coll := v.(type) {
		case []any:
			i, isInt := k.(int64)
			if !isInt {
				return nil, false, false
			}
			if i < 0 || i >= int64(len(coll)) {
				return nil, false, true
			}
			return coll[i], true, true
		case map[string]any:
			ks, isString := k.(string)
			if !isString {
				return nil, false, false
			}
			fv, found := coll[ks]
			return fv, found, true
		}
		return nil, false, false
	}
}

// optValue makes an optional value of a chain's result.
func optValue(w optWalker) fnode {
	return func(x *fx) (any, bool) {
		v, has, ok := w(x)
		switch {
		case !ok:
			return nil, false
		case !has:
			return noneValue, true
		}
		return &optional{v: v, has: true}, true
	}
}

// size is cel-go's actualSize bounded from above: strings count bytes
// (cel-go counts code points, never more).
func size(v any) uint64 {
	switch v := v.(type) {
	case string:
		return uint64(len(v))
	case []any:
		return uint64(len(v))
	case map[string]any:
		return uint64(len(v))
	case *optional:
		if v.has {
			return size(v.v)
		}
	}
	return 1
}

// traversal is ceil(n * StringTraversalCostFactor (0.1)).
func traversal(n uint64) uint64 { return (n + 9) / 10 }

func memberCall(fn string, target fnode, args []fnode) (fnode, error) {
	switch {
	case fn == "join" && len(args) <= 1:
		return joinCall(target, args), nil
	case fn == "size" && len(args) == 0:
		return unary(target, sizeOf), nil
	case (fn == "startsWith" || fn == "endsWith" || fn == "contains") && len(args) == 1:
		return stringCall(fn, target, args[0])
	}
	return nil, errUnsupported
}

func sizeOf(x *fx, v any) (any, bool) {
	x.cost++
	switch v := v.(type) {
	case string:
		return int64(utf8.RuneCountInString(v)), true
	case []any:
		return int64(len(v)), true
	case map[string]any:
		return int64(len(v)), true
	}
	return nil, false
}

func stringCall(fn string, target, arg fnode) (fnode, error) {
	return func(x *fx) (any, bool) {
		s, ok := evalAs[string](target, x)
		if !ok {
			return nil, false
		}
		a, ok := evalAs[string](arg, x)
		if !ok {
			return nil, false
		}
		x.cost++
		switch fn {
		case "startsWith":
			x.cost += traversal(uint64(len(a)))
			return strings.HasPrefix(s, a), true
		case "endsWith":
			x.cost += traversal(uint64(len(a)))
			return strings.HasSuffix(s, a), true
		default: // contains
			x.cost += traversal(uint64(len(s))) * traversal(uint64(len(a)))
			return strings.Contains(s, a), true
		}
	}, nil
}

func unary(a fnode, op func(*fx, any) (any, bool)) fnode {
	return func(x *fx) (any, bool) {
		v, ok := a(x)
		if !ok {
			return nil, false
		}
		return op(x, v)
	}
}

func binary(a, b fnode, op func(*fx, any, any) (any, bool)) fnode {
	return func(x *fx) (any, bool) {
		l, ok := a(x)
		if !ok {
			return nil, false
		}
		r, ok := b(x)
		if !ok {
			return nil, false
		}
		return op(x, l, r)
	}
}

func globalCall(fn string, args []fnode) (fnode, error) {
	switch len(args) {
	case 1:
		a := args[0]
		switch fn {
		case operators.LogicalNot:
			return unary(a, func(x *fx, v any) (any, bool) {
				b, ok := v.(bool)
				x.cost++
				return !b, ok
			}), nil
		case operators.NotStrictlyFalse:
			return unary(a, func(x *fx, v any) (any, bool) {
				b, ok := v.(bool)
				x.cost++
				return b, ok
			}), nil
		case operators.Negate:
			return unary(a, func(x *fx, v any) (any, bool) {
				x.cost++
				switch v := v.(type) {
				case int64:
					if v == math.MinInt64 {
						return nil, false
					}
					return -v, true
				case float64:
					return -v, true
				}
				return nil, false
			}), nil
		case "size":
			return unary(a, sizeOf), nil
		}
	case 2:
		a, b := args[0], args[1]
		switch fn {
		case operators.LogicalAnd, operators.LogicalOr:
			and := fn == operators.LogicalAnd
			return func(x *fx) (any, bool) {
				lb, ok := evalAs[bool](a, x)
				if !ok {
					return nil, false
				}
				x.cost++
				if lb != and {
					return lb, true
				}
				return evalAs[bool](b, x)
			}, nil
		case operators.Equals, operators.NotEquals:
			ne := fn == operators.NotEquals
			return binary(a, b, func(x *fx, l, r any) (any, bool) {
				x.cost += 1 + traversal(min(size(l), size(r)))
				eq, ok := equal(l, r)
				return eq != ne, ok
			}), nil
		case operators.Less, operators.LessEquals, operators.Greater, operators.GreaterEquals:
			return binary(a, b, func(x *fx, l, r any) (any, bool) {
				x.cost += 1 + traversal(min(size(l), size(r)))
				c, ok := compare(l, r)
				if !ok {
					return nil, false
				}
				switch fn {
				case operators.Less:
					return c < 0, true
				case operators.LessEquals:
					return c <= 0, true
				case operators.Greater:
					return c > 0, true
				}
				return c >= 0, true
			}), nil
		case operators.Add:
			return binary(a, b, add), nil
		case operators.Subtract, operators.Multiply:
			mul := fn == operators.Multiply
			return binary(a, b, func(x *fx, l, r any) (any, bool) {
				x.cost++
				switch l := l.(type) {
				case int64:
					r, ok := r.(int64)
					if !ok {
						return nil, false
					}
					if mul {
						p := l * r
						if l != 0 && (p/l != r || (l == -1 && r == math.MinInt64)) {
							return nil, false
						}
						return p, true
					}
					d := l - r
					if (r > 0 && d > l) || (r < 0 && d < l) {
						return nil, false
					}
					return d, true
				case float64:
					r, ok := r.(float64)
					if !ok {
						return nil, false
					}
					if mul {
						return l * r, true
					}
					return l - r, true
				}
				return nil, false
			}), nil
		case operators.In:
			return binary(a, b, func(x *fx, el, coll any) (any, bool) {
				x.cost++
				switch coll := coll.(type) {
				case []any:
					x.cost += uint64(len(coll))
					for _, item := range coll {
						eq, ok := equal(el, item)
						if !ok {
							return nil, false
						}
						if eq {
							return true, true
						}
					}
					return false, true
				case map[string]any:
					k, ok := el.(string)
					if !ok {
						return nil, false
					}
					_, found := coll[k]
					return found, true
				}
				return nil, false
			}), nil
		case operators.Index:
			return binary(a, b, func(x *fx, coll, key any) (any, bool) {
				x.cost += qualifierCost
				switch coll := coll.(type) {
				case []any:
					i, ok := key.(int64)
					if !ok || i < 0 || i >= int64(len(coll)) {
						return nil, false
					}
					return coll[i], true
				case map[string]any:
					k, ok := key.(string)
					if !ok {
						return nil, false
					}
					v, found := coll[k]
					return v, found
				}
				return nil, false
			}), nil
		}
	case 3:
		if fn == operators.Conditional {
			cond, t, f := args[0], args[1], args[2]
			return func(x *fx) (any, bool) {
				b, ok := evalAs[bool](cond, x)
				if !ok {
					return nil, false
				}
				x.cost++
				if b {
					return t(x)
				}
				return f(x)
			}, nil
		}
	}
	return nil, errUnsupported
}

func add(x *fx, l, r any) (any, bool) {
	x.cost++
	switch l := l.(type) {
	case int64:
		r, ok := r.(int64)
		if !ok {
			return nil, false
		}
		s := l + r
		if (r > 0 && s < l) || (r < 0 && s > l) {
			return nil, false
		}
		return s, true
	case float64:
		r, ok := r.(float64)
		return l + r, ok
	case string:
		r, ok := r.(string)
		if !ok {
			return nil, false
		}
		x.cost += traversal(uint64(len(l) + len(r)))
		return l + r, true
	case []any:
		r, ok := r.([]any)
		if !ok {
			return nil, false
		}
		switch {
		case len(r) == 0:
			return l, true
		case len(l) == 0:
			return r, true
		}
		out := make([]any, 0, len(l)+len(r))
		return append(append(out, l...), r...), true
	}
	return nil, false
}

// equal is CEL equality for the kinds where it is plain Go equality; ok is
// false for everything else (mixed numeric kinds, lists, maps, null against
// a value), which is left to cel-go.
func equal(l, r any) (bool, bool) {
	switch l := l.(type) {
	case string:
		r, ok := r.(string)
		return l == r, ok
	case int64:
		r, ok := r.(int64)
		return l == r, ok
	case bool:
		r, ok := r.(bool)
		return l == r, ok
	case float64:
		r, ok := r.(float64)
		return l == r, ok
	case nil:
		return true, r == nil
	}
	return false, false
}

func compare(l, r any) (int, bool) {
	switch l := l.(type) {
	case string:
		r, ok := r.(string)
		return strings.Compare(l, r), ok
	case int64:
		r, ok := r.(int64)
		switch {
		case !ok:
			return 0, false
		case l < r:
			return -1, true
		case l > r:
			return 1, true
		}
		return 0, true
	case float64:
		r, ok := r.(float64)
		if !ok || math.IsNaN(l) || math.IsNaN(r) {
			return 0, false
		}
		switch {
		case l < r:
			return -1, true
		case l > r:
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// matchesConst is string.matches(pattern) with a constant pattern, compiled
// once as cel-go's regex optimisation does; other patterns are left to
// cel-go.
func matchesConst(target fnode, args []celast.Expr) (fnode, error) {
	if len(args) != 1 || args[0].Kind() != celast.LiteralKind {
		return nil, errUnsupported
	}
	lit, isString := args[0].AsLiteral().(types.String)
	if !isString {
		return nil, errUnsupported
	}
	pattern := string(lit)
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, errUnsupported
	}
	regexCost := (uint64(len(pattern)) + 3) / 4 // ceil(len * RegexStringLengthCostFactor (0.25))
	return func(x *fx) (any, bool) {
		s, ok := evalAs[string](target, x)
		if !ok {
			return nil, false
		}
		x.cost += 1 + traversal(1+uint64(len(s)))*regexCost
		return re.MatchString(s), true
	}, nil
}

// joinCall is the strings extension's list.join([separator]); the
// apiserver's estimator charges ceil(2 * 0.1 * size(result)).
func joinCall(target fnode, args []fnode) fnode {
	return func(x *fx) (any, bool) {
		list, ok := evalAs[[]any](target, x)
		if !ok {
			return nil, false
		}
		sep := ""
		if len(args) == 1 {
			if sep, ok = evalAs[string](args[0], x); !ok {
				return nil, false
			}
		}
		var b strings.Builder
		for i, el := range list {
			s, isString := el.(string)
			if !isString {
				return nil, false
			}
			if i > 0 {
				b.WriteString(sep)
			}
			b.WriteString(s)
		}
		out := b.String()
		x.cost += 1 + traversal(2*uint64(len(out)))
		return out, true
	}
}
