package fastcel

import (
	"regexp"
	"strings"
	"unicode/utf8"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
)

func memberCall(fn string, target node, args []node) (node, error) {
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

func stringCall(fn string, target, arg node) (node, error) {
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

// matchesConst is string.matches(pattern) with a constant pattern, compiled
// once as cel-go's regex optimisation does; other patterns are left to
// cel-go.
func matchesConst(target node, args []celast.Expr) (node, error) {
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
func joinCall(target node, args []node) node {
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
