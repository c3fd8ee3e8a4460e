package evaluator

import "testing"

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
