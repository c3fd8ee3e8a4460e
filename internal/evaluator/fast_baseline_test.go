package evaluator

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/evaluator/fastcel"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/cel/environment"
)

// fastEnvStub serves the fast interpreter a decoded object and the
// variables of one policy, evaluated with the interpreter too.
type fastEnvStub struct {
	object any
	params any
	vars   map[string]*fastcel.Program
	stack  fastcel.Stack
}

func (e *fastEnvStub) Stack() *fastcel.Stack { return &e.stack }
func (e *fastEnvStub) Object() any           { return e.object }
func (e *fastEnvStub) OldObject() any        { return nil }
func (e *fastEnvStub) Params() (any, bool)   { return e.params, true }
func (e *fastEnvStub) Cancelled() bool       { return false }
func (e *fastEnvStub) Variable(name string) (any, bool) {
	p := e.vars[name]
	if p == nil {
		return nil, false
	}
	v, _, ok := p.Eval(e)
	return v, ok
}

// fastProgramForTest compiles an expression for the fast interpreter as a
// policy without variables does.
func fastProgramForTest(t testing.TB, text string) *fastcel.Program {
	t.Helper()
	c, err := getCompiler()
	if err != nil {
		t.Fatal(err)
	}
	defer putCompiler(c)
	return c.fastProgram(text, environment.StoredExpressions)
}

// TestBaselineTakesTheFastPath keeps the baseline policy set, the sample
// behind the performance target, on the fast interpreter: every expression
// compiles for it and evaluates on the realistic Pod without declining.
// Every messageExpression, auditAnnotation and matchCondition compiles for it.
func TestBaselineTakesTheFastPath(t *testing.T) {
	objs, pod := loadBaseline(t)
	s := Compile(objs, CompileOptions{})
	for _, cp := range s.policies {
		env := &fastEnvStub{object: pod, vars: map[string]*fastcel.Program{}}
		for _, v := range cp.variables {
			env.vars[v.name] = v.expr.fast
		}
		var exprs []*compiledExpr
		for i := range cp.variables {
			exprs = append(exprs, &cp.variables[i].expr)
		}
		exprs = append(exprs, cp.validating.validationExprs...)
		// The messages of denials are built on the fast path too: a Pod
		// need not have the fields they read, so they only have to compile.
		for _, ce := range append(append(cp.validating.messageExprs, cp.validating.auditExprs...), cp.matchExprs...) {
			if ce != nil && ce.fast == nil {
				t.Errorf("%s %s: no fast program for %q", cp.name, ce.field, ce.text)
			}
		}
		for _, ce := range exprs {
			if ce == nil {
				continue
			}
			if ce.fast == nil {
				t.Errorf("%s %s: no fast program for %q", cp.name, ce.field, ce.text)
				continue
			}
			if _, _, ok := ce.fast.Eval(env); !ok {
				t.Errorf("%s %s: the fast interpreter declined %q", cp.name, ce.field, ce.text)
			}
		}
	}
}

// TestValidateConcurrently evaluates one snapshot from many goroutines at
// once, as the webhook does: the fast programs, their constant lists and
// maps and the shared variable results are read by all of them (run with
// -race to check it), and every answer must be the same.
func TestValidateConcurrently(t *testing.T) {
	objs, pod := loadBaseline(t)
	s := Compile(objs, CompileOptions{})
	bad := clonePod(pod)
	bad["spec"].(map[string]any)["hostNetwork"] = true
	want := map[bool]*Result{}
	for _, p := range []map[string]any{pod, bad} {
		want[p["spec"].(map[string]any)["hostNetwork"] == true] = s.Evaluate(context.Background(), Validating, baselineRequest(p))
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				p, isBad := pod, (g+i)%2 == 1
				if isBad {
					p = bad
				}
				if got := s.Evaluate(context.Background(), Validating, baselineRequest(p)); !reflect.DeepEqual(got, want[isBad]) {
					errs <- fmt.Sprintf("goroutine %d, request %d: %+v", g, i, got.Status)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if !want[false].Allowed || want[true].Allowed {
		t.Fatalf("fixture: the good Pod must be allowed and the bad one denied")
	}
}

// The fast interpreter reads a param's decoded map (fastEnv.Params), which
// is right only when the param's CEL value is cel-go's wrapping of that
// map: for built-in kinds, made through their typed form, and for custom
// resources alike.
func TestParamsAreReadAsTheirMaps(t *testing.T) {
	for _, u := range []*unstructured.Unstructured{
		configMap("n", "cm", map[string]string{"app": "web"}, map[string]any{"tags": "a,b", "max": "3"}),
		crParam("n", "limits", map[string]any{"max": int64(3), "ratio": 0.0, "tags": []any{"a", nil}}),
	} {
		pv := paramValue(u)
		m := nativeMap(pv)
		if m == nil {
			t.Fatalf("param %v is not read as its map", u.Object)
		}
		if !sameNativeMap(pv.Value(), m) {
			t.Fatalf("param %v is read as another map than its CEL value's", u.Object)
		}
	}
}

func sameNativeMap(v any, m map[string]any) bool {
	vm, ok := v.(map[string]any)
	return ok && reflect.ValueOf(vm).UnsafePointer() == reflect.ValueOf(m).UnsafePointer()
}
