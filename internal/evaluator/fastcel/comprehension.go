package fastcel

import (
	"strings"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
)

func (c *compiler) comprehension(ce celast.ComprehensionExpr) (node, error) {
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
func (c *compiler) fold(ce celast.ComprehensionExpr, base int) (func(*fx, []any) (any, bool), error) {
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
			if x.slots[accuSlot], ok = step(x); !ok || x.cost > costCeiling {
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
	return x.iters%100 != 0 || !x.env.Cancelled()
}

// listBuilder recognises the expansions of the map and filter macros,
//
//	step: @result + [e]                     (l.map(v, e))
//	step: p ? @result + [e] : @result       (l.filter(v, p), l.map(v, p, e))
//
// with an empty list as init, true as condition and @result as result, and
// builds the result by appending instead of copying the accumulator at
// every step. It charges what evaluating those steps node by node charges.
func (c *compiler) listBuilder(ce celast.ComprehensionExpr, base int) (func(*fx, []any) (any, bool), error) {
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
	var pred node
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
					if x.cost++; x.cost > costCeiling { // @result
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
			if x.cost > costCeiling {
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
