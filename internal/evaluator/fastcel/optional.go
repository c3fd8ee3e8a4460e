package fastcel

import (
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
)

type optional struct {
	v   any
	has bool
}

var noneValue = &optional{}

func (c *compiler) optionalCall(fn string, argExprs []celast.Expr, gs []guard) (node, error) {
	args, err := c.exprs(argExprs)
	if err != nil {
		return nil, err
	}
	args = guarded(args, gs)
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
func (c *compiler) optChain(e celast.Expr) (optWalker, bool, error) {
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
func (c *compiler) optBase(e celast.Expr) (optWalker, error) {
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
func optionalOf(target node) optWalker {
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
func (c *compiler) optionalMember(fn string, w optWalker, argExprs []celast.Expr, altGuard guard) (node, error) {
	switch fn {
	case "orValue":
		alt, err := c.expr(argExprs[0])
		if err != nil {
			return nil, err
		}
		alt = guardNode(alt, altGuard)
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
		if found && fv == nil {
			return nil, false, false // explicitNull
		}
		return fv, found, true
	}
}

func optIndexStep(inner optWalker, key node) optWalker {
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
			if found && fv == nil {
				return nil, false, false // explicitNull
			}
			return fv, found, true
		}
		return nil, false, false
	}
}

// optValue makes an optional value of a chain's result.
func optValue(w optWalker) node {
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
