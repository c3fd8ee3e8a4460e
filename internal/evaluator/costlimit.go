package evaluator

// costLimit is a request's CEL cost limit across all its bindings
// (WithCostLimit), on top of the apiserver's per-evaluation budgets. Each
// evaluation gets its usual budget or what the request has left, whichever
// is smaller, so a request over its limit fails the way the apiserver's
// own budgets fail: the evaluation that runs out gets the plugin's
// out-of-budget error ("validation failed due to running out of cost
// budget, no further validation rules will be run"), and its binding's
// failurePolicy decides. With the fast interpreter the costs charged are
// its upper bounds; running out on them evaluates the request again
// exactly (fastenv.go), with a fresh limit.
type costLimit struct {
	limit, left int64
	// exceeded is set when an evaluation ran out of a budget the limit
	// had cut below the usual one.
	exceeded bool
}

func newCostLimit(limit int64) *costLimit {
	if limit <= 0 {
		return nil
	}
	return &costLimit{limit: limit, left: limit}
}

// spent is what the request's evaluations charged to the limit.
func (c *costLimit) spent() int64 {
	if c == nil {
		return 0
	}
	return c.limit - c.left
}

// budget is the budget of an evaluation whose usual budget is b.
func (rc *reqCtx) budget(b int64) int64 {
	if rc.cost == nil {
		return b
	}
	return min(b, rc.cost.left)
}

// charge takes from the request's limit what an evaluation given budget
// used: all of it when it ran out (remaining < 0).
func (rc *reqCtx) charge(usual, given, remaining int64) {
	if rc.cost == nil {
		return
	}
	if remaining < 0 {
		remaining = 0
		if given < usual {
			rc.cost.exceeded = true
		}
	}
	rc.cost.left -= given - remaining
}

// WithCostLimit bounds the CEL cost of the whole request, summed over its
// bindings, to limit (no bound when limit <= 0). Result.CostLimitExceeded
// says when the limit, not a per-evaluation budget, stopped an evaluation.
func WithCostLimit(limit int64) Option {
	return func(c *evalConfig) { c.costLimit = limit }
}
