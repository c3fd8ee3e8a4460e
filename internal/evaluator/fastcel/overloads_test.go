package fastcel

import (
	"context"
	"testing"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/environment"
)

// TestFollowsCheckedOverloads: where the checker chose one overload for a
// type the value does not have at run time, cel-go fails with "no such
// overload" and the interpreter must decline; where the value fits, both
// answer alike. Every expression compiles for the interpreter, so that a
// decline is the run-time guard's doing.
func TestFollowsCheckedOverloads(t *testing.T) {
	fc, err := plugincel.NewCompositedCompiler(envSet)
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{"spec": map[string]any{"m": map[string]any{
		"k": "a", "s": "5", "n": int64(5), "d": 2.5, "b": true,
		"l": []any{int64(1), int64(2)}, "mm": map[string]any{"a": int64(1)}, "ls": []any{"x", "y"}}}}
	for _, tc := range []struct {
		expr     string
		celFails bool
	}{
		{"string(object.spec.m[?'k'].orValue(1.5)) == 'a'", true},
		{"string(object.spec.m[?'k'].orValue(1)) == 'a'", true},
		{"string(object.spec.m[?'k'].orValue(true)) == 'a'", true},
		{"string(object.spec.m[?'n'].orValue('x')) == '5'", true},
		{"int(object.spec.m[?'s'].orValue(1.5)) == 5", true},
		{"int(object.spec.m[?'n'].orValue(1.5)) == 5", true},
		{"int(object.spec.m[?'d'].orValue('7')) == 2", true},
		{"double(object.spec.m[?'n'].orValue('1.5')) == 5.0", true},
		{"double(object.spec.m[?'s'].orValue(1)) == 5.0", true},
		{"bool(object.spec.m[?'b'].orValue('true'))", true},
		{"string(-object.spec.m[?'n'].orValue(1.5)) == '-5'", true},
		{"string(object.spec.m[?'k'].orValue(1.5) + object.spec.m[?'k'].orValue(2.5)) == 'aa'", true},
		{"[object.spec.m[?'k'].orValue(1.5)].all(v, string(v) == 'a')", true},
		{"object.spec.m[?'l'].orValue(['x']).join(',') == '1,2'", true},
		// The value fits the chosen overload, or the checker left the
		// choice to the run time (dyn), or the operator ignores overloads.
		{"string(object.spec.m[?'d'].orValue(1.5)) == '2.5'", false},
		{"int(object.spec.m[?'s'].orValue('7')) == 5", false},
		{"string(object.spec.m.k) == 'a'", false},
		{"string(dyn(object.spec.m[?'k'].orValue(1.5))) == 'a'", false},
		{"dyn(object.spec.m[?'k'].orValue(1.5)) == 'a'", false},
		{"object.spec.m[?'ls'].orValue(['z']).join(',') == 'x,y'", false},
		{"size(object.spec.m[?'ls'].orValue(['z'])) == 2", false},
		{"'a' in object.spec.m[?'mm'].orValue({'x': 1})", false},
		{"optional.of(object.spec.m.k).hasValue() && optional.none().orValue(1) == 1", false},
		// The comparisons, size and in have one implementation for every
		// overload, which dispatches by the run-time type.
		{"object.spec.m[?'s'].orValue(1.5) < object.spec.m[?'k'].orValue(2.5)", false},
		{"size(object.spec.m[?'l'].orValue('xy')) == 2", false},
		{"object.spec.m[?'l'].orValue('xy').size() == 2", false},
		{"'a' in object.spec.m[?'mm'].orValue(['x'])", false},
	} {
		res := fc.CompileCELExpression(&validating.Variable{Name: "v", Expression: tc.expr},
			plugincel.OptionalVariableDeclarations{HasParams: true}, environment.StoredExpressions)
		if res.Error != nil {
			t.Fatalf("%s: %v", tc.expr, res.Error)
		}
		act, err := interpreter.NewActivation(map[string]any{plugincel.ObjectVarName: types.DefaultTypeAdapter.NativeToValue(obj),
			plugincel.OldObjectVarName: nil, plugincel.ParamsVarName: nil, plugincel.RequestVarName: nil,
			plugincel.NamespaceVarName: nil, plugincel.VariableVarName: nil})
		if err != nil {
			t.Fatal(err)
		}
		want, _, celErr := res.Program.ContextEval(context.Background(), act)
		if (celErr != nil) != tc.celFails {
			t.Fatalf("%s: cel-go gave %v, %v; the case expects it to fail: %v", tc.expr, want, celErr, tc.celFails)
		}
		prog := Compile(checkEnv, tc.expr)
		if prog == nil {
			t.Fatalf("%s: the interpreter declined to compile it", tc.expr)
		}
		got, _, ok := prog.Eval(&stubEnv{object: obj})
		switch {
		case tc.celFails && ok:
			t.Errorf("%s: the interpreter answered %v, cel-go failed: %v", tc.expr, got, celErr)
		case !tc.celFails && !ok:
			t.Errorf("%s: the interpreter declined, cel-go answered %v", tc.expr, want)
		case ok && !sameValue(got, want):
			t.Errorf("%s: the interpreter answered %v, cel-go %v", tc.expr, got, want)
		}
	}
}
