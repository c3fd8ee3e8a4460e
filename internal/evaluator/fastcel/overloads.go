package fastcel

import (
	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/decls"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
)

// A call's overload is the checker's choice, not the run time's. When the
// checker resolved a call to exactly one overload (the reference map of the
// checked AST), cel-go's planner binds that overload and calls it behind a
// guard that every argument's run-time type is assignable to the
// overload's parameter type (interpreter/planner.go resolveFunction,
// common/decls/decls.go matchesRuntimeSignature); a value of another type
// is "no such overload", even where another overload of the function
// would take it. So string(object.spec.m[?'k'].orValue(1.5)), checked as
// double_to_string, fails in cel-go when spec.m.k is a string. The
// interpreter dispatches by the run-time type, so for such a call it
// checks each argument against the chosen overload's parameter type first
// and declines when one does not fit. A call the checker left with
// several overloads is dispatched by run-time type in cel-go too, and so
// is one whose function has a single implementation for all overloads.
// (A function may also turn its guards off, as startsWith does; the
// interpreter guards it all the same, which only declines more.)
//
// The operators cel-go plans by name (&&, ||, ?:, ==, !=, [], .?f, [?i])
// ignore overloads and are not guarded.

// CheckEnv is the environment the interpreter's expressions are checked
// in: base (the plugin's composited environment, which declares
// "variables" with the types of the variables declared so far) with
// object, oldObject and params declared as the plugin's createEnvForOpts
// declares them. The other identifiers (request, namespaceObject,
// authorizer) are left undeclared: an expression that reads them does not
// check, and the interpreter declines it, as it would anyway.
func CheckEnv(base *cel.Env) (*cel.Env, error) {
	return base.Extend(
		cel.Variable(plugincel.ObjectVarName, cel.DynType),
		cel.Variable(plugincel.OldObjectVarName, cel.DynType),
		cel.Variable(plugincel.ParamsVarName, cel.DynType))
}

// guard reports whether a run-time value fits a parameter type; nil
// accepts every value.
type guard func(v any) bool

// overloadGuards returns one guard per argument of call expression e (the
// target first for a member call) when the checker resolved it to one
// overload, and nil when it left several (or the call is not checked).
func (c *compiler) overloadGuards(e celast.Expr, fn string, nargs int) ([]guard, error) {
	ref := c.refs[e.ID()]
	if ref == nil || len(ref.OverloadIDs) != 1 {
		return nil, nil
	}
	o := c.overload(fn, ref.OverloadIDs[0])
	if o == nil || len(o.ArgTypes()) != nargs || o.OperandTrait() != 0 {
		return nil, errUnsupported
	}
	if !o.HasBinding() {
		// The function has one implementation for all its overloads (a
		// singleton binding, as the comparisons have): cel-go finds no
		// binding by the overload's ID and calls that one, unguarded.
		return nil, nil
	}
	gs := make([]guard, nargs)
	for i, t := range o.ArgTypes() {
		g, err := guardOf(t)
		if err != nil {
			return nil, err
		}
		gs[i] = g
	}
	return gs, nil
}

// overload finds the declaration of an overload of fn by its ID.
func (c *compiler) overload(fn, id string) *decls.OverloadDecl {
	if c.funcs == nil {
		c.funcs = c.env.Functions()
	}
	f := c.funcs[fn]
	if f == nil {
		return nil
	}
	for _, o := range f.OverloadDecls() {
		if o.ID() == id {
			return o
		}
	}
	return nil
}

// guarded wraps the argument nodes with their guards: a value that does
// not fit declines, where cel-go reports "no such overload".
func guarded(args []node, gs []guard) []node {
	if gs == nil {
		return args
	}
	out := make([]node, len(args))
	for i, a := range args {
		out[i] = guardNode(a, gs[i])
	}
	return out
}

func guardNode(a node, g guard) node {
	if g == nil {
		return a
	}
	return func(x *fx) (any, bool) {
		v, ok := a(x)
		if !ok || !g(v) {
			return nil, false
		}
		return v, true
	}
}

// guardOf is types.Type.IsAssignableRuntimeType over the interpreter's
// values. It may refuse a value cel-go accepts (the call then declines),
// never the other way round.
func guardOf(t *types.Type) (guard, error) {
	switch t.Kind() {
	case types.DynKind, types.AnyKind, types.TypeParamKind:
		return nil, nil
	case types.ListKind:
		elem, err := guardOf(t.Parameters()[0])
		if err != nil {
			return nil, err
		}
		// cel-go checks the first element only.
		return func(v any) bool {
			l, ok := v.([]any)
			return ok && (len(l) == 0 || elem == nil || elem(l[0]))
		}, nil
	case types.MapKind:
		key, err := guardOf(t.Parameters()[0])
		if err != nil {
			return nil, err
		}
		elem, err := guardOf(t.Parameters()[1])
		if err != nil {
			return nil, err
		}
		// cel-go checks the entry its iterator yields first, which for a
		// Go map is any entry: only a map whose entries all fit is
		// certain to pass.
		return func(v any) bool {
			m, ok := v.(map[string]any)
			if !ok {
				return false
			}
			for k, e := range m {
				if (key != nil && !key(k)) || (elem != nil && !elem(e)) {
					return false
				}
			}
			return true
		}, nil
	case types.OpaqueKind:
		if t.TypeName() != types.OptionalType.TypeName() {
			return nil, errUnsupported
		}
		return func(v any) bool { _, ok := v.(*optional); return ok }, nil
	}
	// A scalar type: ask the type itself about one value of each kind the
	// interpreter holds (a nullable wrapper type takes null too).
	var fits [5]bool
	for i, probe := range []ref.Val{types.String(""), types.Int(0), types.Double(0), types.False, types.NullValue} {
		fits[i] = t.IsAssignableRuntimeType(probe)
	}
	return func(v any) bool {
		switch v.(type) {
		case string:
			return fits[0]
		case int64:
			return fits[1]
		case float64:
			return fits[2]
		case bool:
			return fits[3]
		case nil:
			return fits[4]
		}
		return false
	}, nil
}
