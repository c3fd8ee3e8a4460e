package evaluator

import (
	"fmt"
	"strconv"
)

// PolicyTrace explains what happened to one policy.
type PolicyTrace struct {
	Policy   string
	Matched  bool
	Reason   string // why it did not match, or its configuration error
	Bindings []BindingTrace
	// Reinvoked marks, for Mutating, the traces of the second pass, where
	// only the reinvocationPolicy IfNeeded invocations run again.
	Reinvoked bool
}

// BindingTrace explains what happened to one binding of a matched policy.
type BindingTrace struct {
	Binding          string
	Param            string
	Matched          bool
	Reason           string
	MatchConditions  []ExpressionTrace
	Validations      []ExpressionTrace
	AuditAnnotations []ExpressionTrace
	// Mutations are a MutatingAdmissionPolicy's mutations, in the order
	// they were applied; those after one that ended the request are
	// missing.
	Mutations []MutationTrace
	Outcome   Outcome
	// Cost is the CEL cost of the validations, messages and audit
	// annotations, or of the mutations' expressions.
	Cost int64
	// Reinvoked marks a trace of Mutate's second pass.
	Reinvoked bool
}

// MutationTrace is one applied mutation of a MutatingAdmissionPolicy.
type MutationTrace struct {
	Index      int    // in spec.mutations
	PatchType  string // ApplyConfiguration or JSONPatch
	Expression string
	// Changed is set when the mutation changed the object. One that
	// applied without changing it (setting what was there, a JSON patch
	// whose test failed) still counts as applied for reinvocation.
	Changed bool
	Error   string
	// Cost is the CEL cost of the expression; 0 when it was not
	// evaluated (a compile error, a request already ended).
	Cost int64
}

// ExpressionTrace is one evaluated expression.
type ExpressionTrace struct {
	Name       string // matchCondition name, audit annotation key, or validation index
	Expression string
	Result     string // the CEL value, or empty on error
	Message    string // for a failed validation: its final message
	Error      string
	Cost       int64
}

// The tracers fill Result.Trace when an evaluation is asked to (WithTrace).
// Every method of a nil tracer does nothing, so that the evaluation reads
// the same whether it is traced or not.
type (
	tracer        []PolicyTrace
	policyTracer  PolicyTrace
	bindingTracer BindingTrace
	exprTracer    []ExpressionTrace
)

// newTracer returns a tracer that appends to res.Trace, or nil.
func newTracer(res *Result, on bool) *tracer {
	if !on {
		return nil
	}
	return (*tracer)(&res.Trace)
}

func (t *tracer) policy(name string) *policyTracer {
	if t == nil {
		return nil
	}
	*t = append(*t, PolicyTrace{Policy: name})
	return (*policyTracer)(&(*t)[len(*t)-1])
}

func (pt *policyTracer) unmatched(reason string) {
	if pt != nil {
		pt.Reason = reason
	}
}

func (pt *policyTracer) matched() {
	if pt != nil {
		pt.Matched = true
	}
}

func (pt *policyTracer) binding(name string) *bindingTracer {
	if pt == nil {
		return nil
	}
	pt.Bindings = append(pt.Bindings, BindingTrace{Binding: name})
	return (*bindingTracer)(&pt.Bindings[len(pt.Bindings)-1])
}

// forParam is the trace of one param of a matched binding: the binding's
// own for the first, a new one (matched too) for each further param.
func (bt *bindingTracer) forParam(pt *policyTracer, p *param) *bindingTracer {
	if bt == nil {
		return nil
	}
	if p != nil && bt.Param != "" {
		pt.Bindings = append(pt.Bindings, BindingTrace{Binding: bt.Binding, Matched: true})
		bt = (*bindingTracer)(&pt.Bindings[len(pt.Bindings)-1])
	}
	bt.Param = ""
	if p != nil {
		bt.Param = p.key()
	}
	return bt
}

func (bt *bindingTracer) failed(err error) {
	if bt != nil {
		bt.Reason, bt.Outcome = err.Error(), OutcomeError
	}
}

func (bt *bindingTracer) skipped(reason string) {
	if bt != nil {
		bt.Reason = reason
	}
}

func (bt *bindingTracer) clusterSkipped() {
	if bt != nil {
		bt.Outcome = OutcomeClusterSkipped
	}
}

func (bt *bindingTracer) matched() {
	if bt != nil {
		bt.Matched = true
	}
}

func (bt *bindingTracer) noParams() {
	if bt != nil {
		bt.Outcome = OutcomeNoParams
		bt.Reason = "no param found; parameterNotFoundAction is Allow"
	}
}

func (bt *bindingTracer) matchConditions() *exprTracer {
	if bt == nil {
		return nil
	}
	return (*exprTracer)(&bt.MatchConditions)
}

func (bt *bindingTracer) validations() *exprTracer {
	if bt == nil {
		return nil
	}
	return (*exprTracer)(&bt.Validations)
}

func (bt *bindingTracer) auditAnnotations() *exprTracer {
	if bt == nil {
		return nil
	}
	return (*exprTracer)(&bt.AuditAnnotations)
}

// finish records the binding's outcome and the cost of its validations
// and audit annotations.
func (bt *bindingTracer) finish(br *BindingResult) {
	if bt == nil {
		return
	}
	bt.Outcome = br.Outcome
	for _, e := range bt.Validations {
		bt.Cost += e.Cost
	}
	for _, e := range bt.AuditAnnotations {
		bt.Cost += e.Cost
	}
	for _, mt := range bt.Mutations {
		bt.Cost += mt.Cost
	}
	if br.Error != "" {
		bt.Reason = br.Error
	}
}

// add records one evaluated expression.
func (t *exprTracer) add(ce *compiledExpr, r exprResult, cost int64) {
	if t == nil {
		return
	}
	e := ExpressionTrace{Expression: ce.text, Cost: cost}
	if r.err != nil {
		e.Error = r.err.Error()
	} else if r.val != nil {
		e.Result = fmt.Sprint(r.val.Value())
	}
	*t = append(*t, e)
}

// name names the i-th recorded expression, when it was recorded (an
// evaluation stopped by the budget records fewer).
func (t *exprTracer) name(i int, name string) {
	if t != nil && i < len(*t) {
		(*t)[i].Name = name
	}
}

// validation names the i-th validation by its index and records its
// message when it failed.
func (t *exprTracer) validation(i int, d *decision) {
	if t == nil || i >= len(*t) {
		return
	}
	(*t)[i].Name = strconv.Itoa(i)
	if d.deny && !d.evalErr {
		(*t)[i].Message = d.message
	}
}

// matchConditions names the recorded matchConditions.
func (t *exprTracer) matchConditions(mcs []compiledMatchCondition) {
	if t == nil {
		return
	}
	for i := range mcs {
		t.name(i, mcs[i].name)
	}
}
