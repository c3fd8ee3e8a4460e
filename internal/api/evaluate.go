package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/portcullis-dev/portcullis/internal/admission"
	"github.com/portcullis-dev/portcullis/internal/answer"
	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/policystore"
)

// evaluateBudget bounds one evaluation as the webhook's default ?timeout
// (10s, minus its margin for the answer) does.
const evaluateBudget = 9 * time.Second

func (s *Server) evaluateRoutes() []route {
	return []route{
		{method: "POST", path: clusterPath + "/evaluate", access: tenantViewer,
			summary: "Evaluate an AdmissionReview as the validating (or, with mutate, the mutating) webhook would for that cluster, with a trace",
			request: apiv1.EvaluateRequest{}, response: apiv1.EvaluateResponse{}, handle: s.evaluate},
	}
}

func (s *Server) evaluate(c *call) error {
	cl, err := s.cluster(c)
	if err != nil {
		return err
	}
	var req apiv1.EvaluateRequest
	if err := c.decode(&req); err != nil {
		return err
	}
	if req.Chain && req.Mutate {
		return fault.InvalidField("chain", "cannot be combined with mutate: chain evaluates the mutating webhook when a MutatingAdmissionPolicy binding matches")
	}
	if len(req.Review) == 0 || string(req.Review) == "null" {
		return fault.InvalidField("review", "is required: the AdmissionReview as an apiserver would send it")
	}
	rev, err := admission.Decode(req.Review)
	if err != nil {
		var fe *fault.Error
		if errors.As(err, &fe) {
			return fault.InvalidField("review", "%s", fe.Message)
		}
		return fault.InvalidField("review", "%v", err)
	}
	// The whole evaluation, compiling the candidate objects included, runs
	// within one budget and under the tenant's limits: compiling thousands
	// of candidate policies is work as real as evaluating them.
	ctx, cancel := context.WithTimeout(c.ctx(), evaluateBudget)
	defer cancel()
	release, opts, err := s.limitEvaluation(ctx, c)
	if err != nil {
		return err
	}
	defer release()
	candidate := len(req.Objects) > 0 || req.Replace
	var snap *policystore.Snapshot
	if candidate {
		// One JSON stream, so that a List among the objects is expanded and
		// objects[i] counts as in an apply.
		var docs [][]byte
		if len(req.Objects) > 0 {
			var stream bytes.Buffer
			for _, o := range req.Objects {
				stream.Write(o)
				stream.WriteByte('\n')
			}
			if docs, err = splitObjects(stream.Bytes(), "objects"); err != nil {
				return err
			}
			// Compiled as an apply's objects would be: the same cap.
			if limit := s.maxApplyDocuments(); len(docs) > limit {
				return fault.Errorf(fault.TooLarge, "the candidate objects are %d, more than the %d one apply may hold",
					len(docs), limit)
			}
		}
		snap, err = s.Policies.CandidateSnapshot(ctx, c.tenant.ID, docs, req.Replace)
	} else {
		snap, err = s.Snapshot(ctx, c.tenant.ID)
	}
	if err != nil {
		return err
	}
	// The cluster's labels, for bindings with a cluster selector.
	rev.Request.ClusterLabels = cl.Labels
	// As in the webhook: without an inventory every namespace is unknown,
	// and bindings that need one follow their failurePolicy.
	opts = append(opts, evaluator.WithNamespaces(answer.Inventory(s.Namespaces(ctx, c.tenant.ID, cl.ID))))
	ans := apiv1.EvaluateResponse{SnapshotVersion: snap.Version, Candidate: candidate}
	if req.Chain {
		err = evaluateChain(ctx, &ans, req.Review, rev, snap.Compiled, opts)
	} else {
		kind := evaluator.Validating
		if req.Mutate {
			kind = evaluator.Mutating
		}
		err = evaluateOne(ctx, &ans, rev, snap.Compiled, kind, opts)
	}
	release()
	if err != nil {
		return err
	}
	// Compact, unlike other answers: an indenting encoder would re-indent
	// the review, which must stay byte for byte the webhook's.
	b, err := json.Marshal(ans)
	if err != nil {
		return err
	}
	c.w.Header().Set("Content-Type", "application/json")
	c.w.WriteHeader(http.StatusOK)
	_, _ = c.w.Write(append(b, '\n'))
	return nil
}

// wireTrace flattens the evaluator's per-policy trace into one entry per
// (policy, binding, param), and one for each policy that did not match.
func wireTrace(res *evaluator.Result) []apiv1.BindingTrace {
	policyErr := map[string]bool{}
	for _, b := range res.Bindings {
		if b.Binding == "" && b.Outcome == evaluator.OutcomeError {
			policyErr[b.Policy] = true
		}
	}
	out := []apiv1.BindingTrace{}
	for _, pt := range res.Trace {
		if pt.Reinvoked && !pt.Matched {
			continue // the first pass says why
		}
		if !pt.Matched {
			outcome := evaluator.OutcomeNotMatched
			if policyErr[pt.Policy] {
				outcome = evaluator.OutcomeError
			}
			out = append(out, apiv1.BindingTrace{Policy: pt.Policy, Reason: pt.Reason, Outcome: string(outcome)})
			continue
		}
		for _, bt := range pt.Bindings {
			if bt.Reinvoked && bt.Outcome != evaluator.OutcomePass && bt.Outcome != evaluator.OutcomeError {
				continue // not run again in the second pass
			}
			t := apiv1.BindingTrace{
				Policy: pt.Policy, Binding: bt.Binding, Param: bt.Param,
				Matched: bt.Matched && bt.Outcome != evaluator.OutcomeNotMatched,
				Reason:  bt.Reason, Outcome: string(bt.Outcome),
				MatchConditions:  wireExpressions(bt.MatchConditions),
				Validations:      wireExpressions(bt.Validations),
				AuditAnnotations: wireExpressions(bt.AuditAnnotations),
				Mutations:        wireMutations(bt.Mutations),
				Cost:             bt.Cost,
				Reinvoked:        bt.Reinvoked,
			}
			if t.Outcome == "" {
				t.Outcome = string(evaluator.OutcomeNotMatched)
			}
			// The evaluator counts validations and audit annotations; the
			// match conditions are CEL too.
			for _, e := range t.MatchConditions {
				t.Cost += e.Cost
			}
			out = append(out, t)
		}
	}
	return out
}

func wireExpressions(in []evaluator.ExpressionTrace) []apiv1.ExpressionTrace {
	if len(in) == 0 {
		return nil
	}
	out := make([]apiv1.ExpressionTrace, len(in))
	for i, e := range in {
		out[i] = apiv1.ExpressionTrace{Name: e.Name, Expression: e.Expression, Result: e.Result, Message: e.Message,
			Error: e.Error, Cost: e.Cost}
	}
	return out
}

func wireMutations(in []evaluator.MutationTrace) []apiv1.MutationTrace {
	if len(in) == 0 {
		return nil
	}
	out := make([]apiv1.MutationTrace, len(in))
	for i, m := range in {
		out[i] = apiv1.MutationTrace{Index: m.Index, PatchType: m.PatchType, Expression: m.Expression, Changed: m.Changed,
			Error: m.Error, Cost: m.Cost}
	}
	return out
}
