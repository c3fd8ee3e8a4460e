package fastcel

import (
	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/decls"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
)

// compiler turns a parsed expression into a tree of closures. Comprehension
// variables live in slots of the evaluation state, numbered by nesting.
type compiler struct {
	scope    []string // comprehension variables in scope, innermost last; index = slot
	maxSlots int
	loops    bool
	// env is the environment the expression was checked in, refs the
	// checked AST's references (the overloads chosen) and funcs env's
	// functions, read on first need (overloads.go).
	env   *cel.Env
	refs  map[int64]*celast.ReferenceInfo
	funcs map[string]*decls.FunctionDecl
}

func (c *compiler) lookup(name string) int {
	for i := len(c.scope) - 1; i >= 0; i-- {
		if c.scope[i] == name {
			return i
		}
	}
	return -1
}

func (c *compiler) exprs(es []celast.Expr) ([]node, error) {
	out := make([]node, len(es))
	for i, e := range es {
		n, err := c.expr(e)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

func (c *compiler) expr(e celast.Expr) (node, error) {
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
		return c.call(e)
	case celast.ListKind:
		return c.list(e.AsList())
	case celast.MapKind:
		return c.mapExpr(e.AsMap())
	case celast.ComprehensionKind:
		return c.comprehension(e.AsComprehension())
	}
	return nil, errUnsupported
}

func literal(v ref.Val) (node, error) {
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

func (c *compiler) ident(name string) (node, error) {
	// Every identifier is an attribute resolution: SelectAndIdentCost (1).
	if slot := c.lookup(name); slot >= 0 {
		return func(x *fx) (any, bool) { x.cost++; return x.slots[slot], true }, nil
	}
	switch name {
	case plugincel.ObjectVarName:
		return func(x *fx) (any, bool) { x.cost++; return x.env.Object(), true }, nil
	case plugincel.OldObjectVarName:
		return func(x *fx) (any, bool) { x.cost++; return x.env.OldObject(), true }, nil
	case plugincel.ParamsVarName:
		return func(x *fx) (any, bool) { x.cost++; return x.env.Params() }, nil
	}
	// request, namespaceObject, authorizer and anything else are left to
	// cel-go: the apiserver hands them to CEL as reflective values of typed
	// objects, whose semantics are theirs.
	return nil, errUnsupported
}

func (c *compiler) selectExpr(s celast.SelectExpr) (node, error) {
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
			return x.env.Variable(field)
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
		if found && fv == nil {
			return nil, false // explicitNull
		}
		if testOnly {
			return found, true
		}
		return fv, found
	}, nil
}

func (c *compiler) list(l celast.ListExpr) (node, error) {
	if len(l.OptionalIndices()) > 0 {
		return nil, errUnsupported
	}
	elems, err := c.exprs(l.Elements())
	if err != nil {
		return nil, err
	}
	if allLiterals(l.Elements()) {
		// Built once: the interpreter never modifies a value. cel-go still
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

func (c *compiler) mapExpr(m celast.MapExpr) (node, error) {
	type entry struct{ k, v node }
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

func (c *compiler) call(e celast.Expr) (node, error) {
	call := e.AsCall()
	fn := call.FunctionName()
	if call.IsMemberFunction() {
		return c.memberCall(e, call)
	}
	nargs := len(call.Args())
	gs, err := c.overloadGuards(e, fn, nargs)
	if err != nil {
		return nil, err
	}
	switch fn {
	case "optional.of", "optional.none":
		// The checker resolves optional.of(x) to this global function.
		return c.optionalCall(fn[len("optional."):], call.Args(), gs)
	case "matches":
		args := call.Args()
		if nargs != 2 {
			return nil, errUnsupported
		}
		target, err := c.expr(args[0])
		if err != nil {
			return nil, err
		}
		if gs != nil {
			target = guardNode(target, gs[0])
		}
		return matchesConst(target, args[1:])
	}
	args, err := c.exprs(call.Args())
	if err != nil {
		return nil, err
	}
	return globalCall(fn, guarded(args, gs))
}

func (c *compiler) memberCall(e celast.Expr, call celast.CallExpr) (node, error) {
	fn := call.FunctionName()
	t := call.Target()
	nargs := len(call.Args())
	if t.Kind() == celast.IdentKind && t.AsIdent() == "optional" && c.lookup("optional") < 0 {
		return c.optionalCall(fn, call.Args(), nil)
	}
	gs, err := c.overloadGuards(e, fn, nargs+1)
	if err != nil {
		return nil, err
	}
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
		// An optional chain or optionalOf yields an optional, which is
		// what these overloads take first; orValue's alternative is of
		// the optional's type parameter.
		var alt guard
		if gs != nil && nargs == 1 {
			alt = gs[1]
		}
		return c.optionalMember(fn, w, call.Args(), alt)
	}
	target, err := c.expr(t)
	if err != nil {
		return nil, err
	}
	var targetGuard []guard
	if gs != nil {
		target, targetGuard = guardNode(target, gs[0]), gs[1:]
	}
	if fn == "matches" {
		return matchesConst(target, call.Args())
	}
	args, err := c.exprs(call.Args())
	if err != nil {
		return nil, err
	}
	return memberCall(fn, target, guarded(args, targetGuard))
}
