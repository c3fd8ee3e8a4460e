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
	var overMap func(*fx, map[string]any) (any, bool)
	if err == nil && build == nil {
		var parts foldParts
		if parts, err = c.foldParts(ce, base); err == nil {
			build = parts.fold(base)
			overMap = parts.mapQuantifier(quantifierOf(ce), base)
		}
	}
	if err != nil {
		return nil, err
	}
	return func(x *fx) (any, bool) {
		r, ok := iterRange(x)
		if !ok {
			return nil, false
		}
		switch r := r.(type) {
		case []any:
			return build(x, r)
		case map[string]any:
			// A map only for all(), exists() and exists_one(), whose answer
			// does not depend on the order cel-go visits its keys in.
			if overMap != nil {
				return overMap(x, r)
			}
		}
		return nil, false
	}, nil
}

// foldParts are a comprehension's compiled init, condition, step and
// result.
type foldParts struct{ accuInit, cond, step, result node }

func (c *compiler) foldParts(ce celast.ComprehensionExpr, base int) (foldParts, error) {
	var p foldParts
	var err error
	if p.accuInit, err = c.expr(ce.AccuInit()); err != nil {
		return p, err
	}
	c.scope = append(c.scope, ce.AccuVar())
	defer func() { c.scope = c.scope[:base] }()
	// The result sees the accumulator but not the iteration variable.
	if p.result, err = c.expr(ce.Result()); err != nil {
		return p, err
	}
	c.scope = append(c.scope, ce.IterVar())
	if p.cond, err = c.expr(ce.LoopCondition()); err != nil {
		return p, err
	}
	p.step, err = c.expr(ce.LoopStep())
	return p, err
}

// fold is any comprehension over a list, step by step as cel-go runs it.
func (p foldParts) fold(base int) func(*fx, []any) (any, bool) {
	accuSlot, iterSlot := base, base+1
	return func(x *fx, items []any) (any, bool) {
		accu, ok := p.accuInit(x)
		if !ok {
			return nil, false
		}
		x.slots[accuSlot] = accu
		for _, it := range items {
			if !x.tick() {
				return nil, false
			}
			x.slots[iterSlot] = it
			more, ok := evalAs[bool](p.cond, x)
			if !ok {
				return nil, false
			}
			if !more {
				break
			}
			if x.slots[accuSlot], ok = p.step(x); !ok || x.cost > costCeiling {
				return nil, false
			}
		}
		x.slots[iterSlot] = nil
		return p.result(x)
	}
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

// mapQuantifier handles all(), exists() and exists_one() over a map. cel-go
// iterates a map in no fixed order, so which keys it visits before all()
// or exists() stops early is not known; but the answer is not in doubt
// when every key's predicate has a value (no error: those decline), and
// evaluating every key charges at least what cel-go charges in any
// order. So each key's iteration (condition, then step) runs with the
// accumulator at its neutral value, the answers are combined, and the
// cost charged is an upper bound of cel-go's (exact when it does not stop
// early), as the interpreter's costs are everywhere. nil for any other
// comprehension, which declines on a map.
func (p foldParts) mapQuantifier(kind quantifier, base int) func(*fx, map[string]any) (any, bool) {
	if kind == notQuantifier {
		return nil
	}
	accuSlot, iterSlot := base, base+1
	return func(x *fx, m map[string]any) (any, bool) {
		init, ok := p.accuInit(x)
		if !ok {
			return nil, false
		}
		acc := init
		for k := range m {
			if !x.tick() {
				return nil, false
			}
			x.slots[iterSlot] = k
			if kind == quantifierExistsOne {
				x.slots[accuSlot] = acc // the count so far: the step adds to it
			} else {
				x.slots[accuSlot] = init // neutral: the step is the predicate
			}
			more, ok := evalAs[bool](p.cond, x)
			if !ok || !more {
				return nil, false
			}
			v, ok := p.step(x)
			if !ok || x.cost > costCeiling {
				return nil, false
			}
			switch kind {
			case quantifierAll, quantifierExists:
				b, isBool := v.(bool)
				if !isBool {
					return nil, false
				}
				if b == (kind == quantifierExists) {
					acc = b // all: a false decides; exists: a true does
				}
			case quantifierExistsOne:
				acc = v
			}
		}
		x.slots[iterSlot] = nil
		x.slots[accuSlot] = acc
		return p.result(x)
	}
}

type quantifier uint8

const (
	notQuantifier quantifier = iota
	quantifierAll
	quantifierExists
	quantifierExistsOne
)

// quantifierOf recognises the expansions of the all, exists and
// exists_one macros (cel-go parser/macro.go, makeQuantifier).
func quantifierOf(ce celast.ComprehensionExpr) quantifier {
	accu := ce.AccuVar()
	isAccu := func(e celast.Expr) bool { return e.Kind() == celast.IdentKind && e.AsIdent() == accu }
	call := func(e celast.Expr, fn string, n int) []celast.Expr {
		if e.Kind() != celast.CallKind || e.AsCall().FunctionName() != fn || e.AsCall().IsMemberFunction() || len(e.AsCall().Args()) != n {
			return nil
		}
		return e.AsCall().Args()
	}
	lit := func(e celast.Expr) any {
		if e.Kind() != celast.LiteralKind {
			return nil
		}
		return e.AsLiteral()
	}
	init, cond, step, res := ce.AccuInit(), ce.LoopCondition(), ce.LoopStep(), ce.Result()
	switch {
	case lit(init) == types.True && isAccu(res):
		if a := call(cond, operators.NotStrictlyFalse, 1); a != nil && isAccu(a[0]) {
			if s := call(step, operators.LogicalAnd, 2); s != nil && isAccu(s[0]) {
				return quantifierAll
			}
		}
	case lit(init) == types.False && isAccu(res):
		if a := call(cond, operators.NotStrictlyFalse, 1); a != nil {
			if n := call(a[0], operators.LogicalNot, 1); n != nil && isAccu(n[0]) {
				if s := call(step, operators.LogicalOr, 2); s != nil && isAccu(s[0]) {
					return quantifierExists
				}
			}
		}
	case lit(init) == types.Int(0) && lit(cond) == types.True:
		r := call(res, operators.Equals, 2)
		s := call(step, operators.Conditional, 3)
		if r != nil && isAccu(r[0]) && lit(r[1]) == types.Int(1) && s != nil && isAccu(s[2]) {
			if add := call(s[1], operators.Add, 2); add != nil && isAccu(add[0]) && lit(add[1]) == types.Int(1) {
				return quantifierExistsOne
			}
		}
	}
	return notQuantifier
}
