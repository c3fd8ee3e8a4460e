package evaluator

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
)

// fastEnvStub serves the fast path a decoded object and the variables of
// one policy, evaluated with the fast path too.
type fastEnvStub struct {
	object any
	params any
	vars   map[string]*fastProgram
	fxs    fxStack
}

func (e *fastEnvStub) fxStack() *fxStack { return &e.fxs }

func (e *fastEnvStub) fastObject() any         { return e.object }
func (e *fastEnvStub) fastOldObject() any      { return nil }
func (e *fastEnvStub) fastParams() (any, bool) { return e.params, true }
func (e *fastEnvStub) cancelled() bool         { return false }
func (e *fastEnvStub) fastVariable(name string) (any, bool) {
	p := e.vars[name]
	if p == nil {
		return nil, false
	}
	v, _, ok := p.eval(e)
	return v, ok
}

// TestBaselineTakesTheFastPath keeps the baseline policy set, the sample
// behind the performance target, on the fast path: every expression
// compiles for it and evaluates on the realistic Pod without giving up.
func TestBaselineTakesTheFastPath(t *testing.T) {
	objs, pod := loadBaseline(t)
	s := Compile(objs, CompileOptions{})
	for _, cp := range s.policies {
		env := &fastEnvStub{object: pod, vars: map[string]*fastProgram{}}
		for _, v := range cp.variables {
			env.vars[v.name] = v.expr.fast
		}
		var exprs []*compiledExpr
		for i := range cp.variables {
			exprs = append(exprs, &cp.variables[i].expr)
		}
		exprs = append(exprs, cp.validationExprs...)
		for _, ce := range exprs {
			if ce == nil {
				continue
			}
			if ce.fast == nil {
				t.Errorf("%s %s: no fast program for %q", cp.name, ce.field, ce.text)
				continue
			}
			if _, _, ok := ce.fast.eval(env); !ok {
				t.Errorf("%s %s: the fast path gave up on %q", cp.name, ce.field, ce.text)
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
		want[p["spec"].(map[string]any)["hostNetwork"] == true] = s.Validate(context.Background(), baselineRequest(p), nil)
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
				if got := s.Validate(context.Background(), baselineRequest(p), nil); !reflect.DeepEqual(got, want[isBad]) {
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
