package fastcel

import (
	"math"
	"strings"

	"github.com/google/cel-go/common/operators"
)

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

func unary(a node, op func(*fx, any) (any, bool)) node {
	return func(x *fx) (any, bool) {
		v, ok := a(x)
		if !ok {
			return nil, false
		}
		return op(x, v)
	}
}

func binary(a, b node, op func(*fx, any, any) (any, bool)) node {
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

// globalCall compiles a call of a global function or operator, one
// function per family of operators.
func globalCall(fn string, args []node) (node, error) {
	switch len(args) {
	case 1:
		return unaryCall(fn, args[0])
	case 2:
		return binaryCall(fn, args[0], args[1])
	case 3:
		if fn == operators.Conditional {
			return conditional(args[0], args[1], args[2]), nil
		}
	}
	return nil, errUnsupported
}

func unaryCall(fn string, a node) (node, error) {
	switch fn {
	case operators.LogicalNot:
		return unary(a, logicalNot), nil
	case operators.NotStrictlyFalse:
		return unary(a, notStrictlyFalse), nil
	case operators.Negate:
		return unary(a, negate), nil
	case "size":
		return unary(a, sizeOf), nil
	}
	if conv := conversion(fn); conv != nil {
		return unary(a, conv), nil
	}
	return nil, errUnsupported
}

func binaryCall(fn string, a, b node) (node, error) {
	switch fn {
	case operators.LogicalAnd, operators.LogicalOr:
		return logical(fn == operators.LogicalAnd, a, b), nil
	case operators.Equals, operators.NotEquals:
		return binary(a, b, equality(fn == operators.NotEquals)), nil
	case operators.Less, operators.LessEquals, operators.Greater, operators.GreaterEquals:
		return binary(a, b, ordering(fn)), nil
	case operators.Add:
		return binary(a, b, add), nil
	case operators.Subtract, operators.Multiply:
		return binary(a, b, arithmetic(fn == operators.Multiply)), nil
	case operators.In:
		return binary(a, b, in), nil
	case operators.Index:
		return binary(a, b, index), nil
	}
	return nil, errUnsupported
}

func logicalNot(x *fx, v any) (any, bool) {
	b, ok := v.(bool)
	x.cost++
	return !b, ok
}

func notStrictlyFalse(x *fx, v any) (any, bool) {
	b, ok := v.(bool)
	x.cost++
	return b, ok
}

func negate(x *fx, v any) (any, bool) {
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
}

// conditional is c ? t : f, which evaluates one branch.
func conditional(cond, t, f node) node {
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
	}
}

// logical is && or ||: the right side is evaluated only when the left does
// not decide (cel-go also tolerates an error on one side, which the
// interpreter declines instead).
func logical(and bool, a, b node) node {
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
	}
}

func equality(ne bool) func(*fx, any, any) (any, bool) {
	return func(x *fx, l, r any) (any, bool) {
		x.cost += 1 + traversal(min(size(l), size(r)))
		eq, ok := equal(l, r)
		return eq != ne, ok
	}
}

// ordering is <, <=, > or >=.
func ordering(fn string) func(*fx, any, any) (any, bool) {
	return func(x *fx, l, r any) (any, bool) {
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
	}
}

// arithmetic is - or *, declining on overflow, which is an error in cel-go.
func arithmetic(mul bool) func(*fx, any, any) (any, bool) {
	return func(x *fx, l, r any) (any, bool) {
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
	}
}

func in(x *fx, el, coll any) (any, bool) {
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
		v, found := coll[k]
		if found && v == nil {
			return nil, false // explicitNull
		}
		return found, true
	}
	return nil, false
}

func index(x *fx, coll, key any) (any, bool) {
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
		if found && v == nil {
			return nil, false // explicitNull
		}
		return v, found
	}
	return nil, false
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
