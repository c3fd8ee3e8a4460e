package evaluator

import (
	"sync/atomic"

	"github.com/google/cel-go/common/types/ref"

	"github.com/portcullis-dev/portcullis/internal/evaluator/fastcel"
)

// fastRedos counts requests evaluated twice because the fast interpreter's
// cost bounds ran out of budget.
var fastRedos atomic.Int64

// ExactReevaluations is the number of requests this process evaluated a
// second time without the fast interpreter, because the per-evaluation
// cost budget, checked against the interpreter's cost bounds, ran out.
// Only requests close to the budget do; each costs twice the time.
func ExactReevaluations() int64 { return fastRedos.Load() }

// outOfBudget is the plugin's out-of-budget error. With the fast
// interpreter the budget holds upper bounds, not costs, so the request is
// evaluated again exactly instead (Snapshot.Evaluate).
func (f *frame) outOfBudget() error {
	if f.fast {
		f.rc.redo = true
	}
	return errOutOfBudget
}

// fastEvaluated finishes evaluate for a result of the fast interpreter,
// with the same budget arithmetic on its cost bound.
func (f *frame) fastEvaluated(val ref.Val, cost, remaining int64) (exprResult, int64, error) {
	compositionCost := f.compositionCost
	f.compositionCost = 0
	if compositionCost > remaining {
		return exprResult{}, -1, f.outOfBudget()
	}
	remaining -= compositionCost
	if cost > remaining {
		return exprResult{}, -1, f.outOfBudget()
	}
	remaining -= cost
	return exprResult{val: val}, remaining, nil
}

// fastEnv is a frame as the fast interpreter's inputs.
type fastEnv frame

var _ fastcel.Env = (*fastEnv)(nil)

func (e *fastEnv) Object() any {
	if v := e.rc.crdView(); v != nil {
		obj, _ := v.fastObjects()
		return obj
	}
	if o := e.rc.req.Object; o != nil {
		return o
	}
	return nil
}

func (e *fastEnv) OldObject() any {
	if v := e.rc.crdView(); v != nil {
		_, old := v.fastObjects()
		return old
	}
	if o := e.rc.req.OldObject; o != nil {
		return o
	}
	return nil
}

// Params is params as the fast interpreter reads it: null without a
// param, the decoded map when cel-go reads that same map.
func (e *fastEnv) Params() (any, bool) {
	if e.param == nil {
		return nil, true
	}
	if e.param.native == nil {
		return nil, false
	}
	return e.param.native, true
}

func (e *fastEnv) Cancelled() bool { return e.ctx.Err() != nil }

func (e *fastEnv) Stack() *fastcel.Stack { return &e.rc.fxs }

// Variable is the fast interpreter's read of variables.<name>: memoised
// per frame like the lazy map, shared across policies like
// frame.variable, and charged to the composition cost like evalVariable,
// with its bound.
func (e *fastEnv) Variable(name string) (any, bool) {
	f := (*frame)(e)
	i, ok := f.cp.varIndex[name]
	if !ok {
		return nil, false
	}
	if f.fastSt == nil {
		f.fastVal = make([]any, len(f.cp.variables))
		f.fastSt = make([]uint8, len(f.cp.variables))
	}
	switch f.fastSt[i] {
	case 1:
		return f.fastVal[i], true
	case 2:
		return nil, false
	}
	f.fastSt[i] = 2 // also guards against a cycle
	v := &f.cp.variables[i]
	if v.expr.fast == nil || v.expr.result.Error != nil {
		return nil, false
	}
	var key varKey
	if v.cacheable {
		key = f.varKey(v, i)
		if r, ok := f.rc.fastVars[key]; ok {
			f.compositionCost += r.cost
			f.fastSt[i], f.fastVal[i] = 1, r.val
			return r.val, true
		}
	}
	val, cost, ok := v.expr.fast.Eval(e)
	if !ok {
		return nil, false
	}
	f.compositionCost += int64(cost)
	if v.cacheable {
		if f.rc.fastVars == nil {
			f.rc.fastVars = make(map[varKey]fastVarResult, 8)
		}
		f.rc.fastVars[key] = fastVarResult{val: val, cost: int64(cost)}
	}
	f.fastSt[i], f.fastVal[i] = 1, val
	return val, true
}

type fastVarResult struct {
	val  any
	cost int64
}
