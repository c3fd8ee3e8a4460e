package fastcel

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/environment"
)

// envSet is the apiserver's base environment, as the evaluator compiles
// with it; checkEnv is CheckEnv of the plugin's composited environment
// for stored expressions, without variables.
var (
	envSet   = environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	checkEnv = func() *cel.Env {
		fc, err := plugincel.NewCompositedCompiler(envSet)
		if err != nil {
			panic(err)
		}
		base, err := fc.Env(environment.StoredExpressions)
		if err != nil {
			panic(err)
		}
		env, err := CheckEnv(base)
		if err != nil {
			panic(err)
		}
		return env
	}()
)

// stubEnv serves the interpreter a decoded object and param, and variables
// evaluated with the interpreter too.
type stubEnv struct {
	object any
	params any
	vars   map[string]*Program
	stack  Stack
}

func (e *stubEnv) Object() any         { return e.object }
func (e *stubEnv) OldObject() any      { return nil }
func (e *stubEnv) Params() (any, bool) { return e.params, true }
func (e *stubEnv) Cancelled() bool     { return false }
func (e *stubEnv) Stack() *Stack       { return &e.stack }
func (e *stubEnv) Variable(name string) (any, bool) {
	p := e.vars[name]
	if p == nil {
		return nil, false
	}
	v, _, ok := p.Eval(e)
	return v, ok
}

// TestMatchesCEL holds the interpreter to cel-go on generated expressions
// over generated objects: whenever the interpreter answers, cel-go (the
// apiserver's compiled program, cost tracking on) must give the same value
// without error, and its actual cost must not exceed the interpreter's
// bound.
func TestMatchesCEL(t *testing.T) {
	fc, err := plugincel.NewCompositedCompiler(envSet)
	if err != nil {
		t.Fatal(err)
	}

	rng := rand.New(rand.NewPCG(7, 11))
	var compiled, fastOK, celErr, withLoop, withConv, overMap int
	const want = 6000
	for i := 0; compiled < want && i < want*20; i++ {
		g := &exprGen{r: rng}
		text := g.expr(kindAny, 4)
		res := fc.CompileCELExpression(&validating.Variable{Name: "v", Expression: text},
			plugincel.OptionalVariableDeclarations{HasParams: true}, environment.StoredExpressions)
		if res.Error != nil {
			continue
		}
		compiled++
		prog := Compile(checkEnv, text)
		for j := 0; j < 3; j++ {
			obj := genObject(rng)
			// The param as the evaluator hands it over: none (null), or the
			// map inside the CEL value the apiserver makes of a param (its
			// conversion turns 0.0 into 0, for one), here of a ConfigMap or
			// a custom resource.
			bindings := map[string]any{
				plugincel.ObjectVarName: types.DefaultTypeAdapter.NativeToValue(obj), plugincel.OldObjectVarName: nil,
				plugincel.ParamsVarName: nil, plugincel.RequestVarName: nil, plugincel.NamespaceVarName: nil,
				plugincel.VariableVarName: nil,
			}
			var params any
			if j > 0 {
				u := &unstructured.Unstructured{Object: genObject(rng)}
				if j == 1 {
					u.Object = map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
						"metadata": map[string]any{"name": "p", "labels": map[string]any{"app": "web"}},
						"data":     map[string]any{"tags": "a,b", "max": "3"}}
				}
				pv := common.SchemalessTypedToVal(u)
				m, ok := pv.Value().(map[string]any)
				if !ok {
					t.Fatalf("param %v is not read as its map", u.Object)
				}
				bindings[plugincel.ParamsVarName], params = pv, m
			}
			act, err := interpreter.NewActivation(bindings)
			if err != nil {
				t.Fatal(err)
			}
			val, details, celEvalErr := res.Program.ContextEval(context.Background(), act)
			if celEvalErr != nil {
				celErr++
			}
			if prog == nil {
				continue
			}
			got, bound, ok := prog.Eval(&stubEnv{object: obj, params: params})
			if !ok {
				continue
			}
			fastOK++
			if strings.Contains(text, ".all(") || strings.Contains(text, ".exists(") || strings.Contains(text, ".map(") || strings.Contains(text, ".filter(") {
				withLoop++
			}
			if convCall.MatchString(text) {
				withConv++
			}
			if mapQuant.MatchString(text) {
				overMap++
			}
			if celEvalErr != nil {
				t.Fatalf("%s\nobject %v\nthe interpreter answered %v, cel-go failed: %v", text, obj, got, celEvalErr)
			}
			if !sameValue(got, val) {
				t.Fatalf("%s\nobject %v\ninterpreter %#v, cel-go %v", text, obj, got, val)
			}
			if actual := *details.ActualCost(); actual > bound {
				t.Fatalf("%s\nobject %v\ncel-go cost %d exceeds the interpreter's bound %d", text, obj, actual, bound)
			}
		}
	}
	t.Logf("%d expressions compiled, %d interpreter answers (%d with a comprehension, %d with a conversion, %d with a quantifier over a map), %d cel-go errors",
		compiled, fastOK, withLoop, withConv, overMap, celErr)
	// The comparison is only worth something if the interpreter answers
	// often and across the constructs.
	if compiled < want || fastOK < compiled || withLoop < 400 || withConv < 400 || overMap < 150 {
		t.Fatalf("too few comparisons: %d compiled, %d interpreter answers, %d with a comprehension, %d with a conversion, %d over a map",
			compiled, fastOK, withLoop, withConv, overMap)
	}
}

var (
	convCall = regexp.MustCompile(`\b(string|int|double|bool|dyn)\(`)
	mapQuant = regexp.MustCompile(`(labels|orValue\(\{\}\)|'web': 2\}|nodeSelector)\.(all|exists|exists_one)\(`)
)

// sameValue reports whether an interpreter value is the CEL value, kind
// for kind (1 and 1.0 differ here, though CEL calls them equal).
func sameValue(fast any, v ref.Val) bool {
	switch f := fast.(type) {
	case bool:
		b, ok := v.(types.Bool)
		return ok && bool(b) == f
	case int64:
		i, ok := v.(types.Int)
		return ok && int64(i) == f
	case float64:
		d, ok := v.(types.Double)
		return ok && (float64(d) == f || math.IsNaN(f) && math.IsNaN(float64(d)))
	case string:
		s, ok := v.(types.String)
		return ok && string(s) == f
	case nil:
		return v == types.NullValue
	case []any:
		l, ok := v.(traits.Lister)
		if !ok || l.Size() != types.Int(len(f)) {
			return false
		}
		for i, el := range f {
			if !sameValue(el, l.Get(types.Int(i))) {
				return false
			}
		}
		return true
	case map[string]any:
		m, ok := v.(traits.Mapper)
		if !ok || m.Size() != types.Int(len(f)) {
			return false
		}
		for k, el := range f {
			mv, found := m.Find(types.String(k))
			if !found || !sameValue(el, mv) {
				return false
			}
		}
		return true
	case *optional:
		o, ok := v.(*types.Optional)
		if !ok || o.HasValue() != f.has {
			return false
		}
		return !f.has || sameValue(f.v, o.GetValue())
	}
	return false
}

// TestStopsAtItsCeiling: an expression whose cost explodes stops as soon
// as its bound passes the ceiling, instead of building every intermediate
// list first (4,000² elements here).
func TestStopsAtItsCeiling(t *testing.T) {
	tags := make([]any, 4000)
	for i := range tags {
		tags[i] = fmt.Sprintf("t%d", i)
	}
	prog := Compile(checkEnv, "object.spec.tags.map(a, object.spec.tags.map(b, b)).size() > 0")
	if prog == nil {
		t.Fatal("no program")
	}
	env := &stubEnv{object: map[string]any{"spec": map[string]any{"tags": tags}}}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	if _, _, ok := prog.Eval(env); ok {
		t.Fatal("the interpreter answered an expression beyond its ceiling")
	}
	runtime.ReadMemStats(&ms)
	if allocated := ms.TotalAlloc - before; allocated > 16<<20 {
		t.Fatalf("the interpreter allocated %d MB before declining", allocated>>20)
	}
}
