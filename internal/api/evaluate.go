package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis-dev/portcullis/internal/admission"
	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/policystore"
	"github.com/portcullis-dev/portcullis/internal/webhook"
)

func (s *Server) listNamespaces(c *call) error {
	cl, err := s.cluster(c)
	if err != nil {
		return err
	}
	nss, err := s.Policies.ListNamespaces(c.ctx(), c.tenant.ID, cl.ID)
	if err != nil {
		return err
	}
	// Sorted by name already; names are unique.
	p, err := page(c, nss, func(ns *corev1.Namespace) string { return ns.Name })
	if err != nil {
		return err
	}
	out := apiv1.List[json.RawMessage]{Items: make([]json.RawMessage, len(p.Items)), Continue: p.Continue}
	for i, ns := range p.Items {
		ns.APIVersion, ns.Kind = "v1", "Namespace"
		if out.Items[i], err = json.Marshal(ns); err != nil {
			return err
		}
	}
	return c.json(out)
}

func (s *Server) importNamespaces(c *call) error {
	cl, err := s.cluster(c)
	if err != nil {
		return err
	}
	body, err := c.body()
	if err != nil {
		return err
	}
	objs, err := splitObjects(body, "items")
	if err != nil {
		return err
	}
	nss := make([]*corev1.Namespace, len(objs))
	for i, js := range objs {
		var meta struct{ APIVersion, Kind string }
		_ = json.Unmarshal(js, &meta)
		if meta.APIVersion != "v1" || meta.Kind != "Namespace" {
			return invalidField(fmt.Sprintf("items[%d].kind", i),
				"must be a Namespace (apiVersion v1), not %s %s: the inventory holds Namespace objects only", meta.APIVersion, meta.Kind)
		}
		ns := &corev1.Namespace{}
		if err := json.Unmarshal(js, ns); err != nil {
			return invalidField(fmt.Sprintf("items[%d]", i), "not a valid Namespace: %v", err)
		}
		nss[i] = ns
	}
	if err := s.Policies.ReplaceNamespaces(c.ctx(), c.tenant.ID, cl.ID, nss); err != nil {
		return err
	}
	c.audit(auditlog.Entry{Action: "import", Kind: "NamespaceInventory", Name: cl.Name,
		Detail: map[string]any{"cluster": cl.Name, "namespaces": len(nss)}})
	return c.json(apiv1.NamespaceImport{Namespaces: len(nss)})
}

// evaluateBudget bounds one evaluation as the webhook's default ?timeout
// (10s, minus its margin for the answer) does.
const evaluateBudget = 9 * time.Second

func (s *Server) evaluate(c *call) error {
	cl, err := s.cluster(c)
	if err != nil {
		return err
	}
	var req apiv1.EvaluateRequest
	if err := c.decode(&req); err != nil {
		return err
	}
	if len(req.Review) == 0 || string(req.Review) == "null" {
		return invalidField("review", "is required: the AdmissionReview as an apiserver would send it")
	}
	rev, err := admission.Decode(req.Review)
	if err != nil {
		var ae *admission.Error
		if errors.As(err, &ae) {
			return invalidField("review", "%s", ae.Message)
		}
		return invalidField("review", "%v", err)
	}
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
		}
		snap, err = s.Policies.CandidateSnapshot(c.ctx(), c.tenant.ID, docs, req.Replace)
	} else {
		snap, err = s.Snapshot(c.ctx(), c.tenant.ID)
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.ctx(), evaluateBudget)
	defer cancel()
	// As in the webhook: without an inventory every namespace is unknown,
	// and bindings that need one follow their failurePolicy.
	var nss evaluator.NamespaceLookup = evaluator.NamespaceMap{}
	if inv, err := s.Namespaces(ctx, c.tenant.ID, cl.ID); err == nil && inv != nil {
		nss = inv
	}
	res, out := webhook.Answer(ctx, rev, snap.Compiled, nss, evaluator.WithTrace())
	// Compact, unlike other answers: an indenting encoder would re-indent
	// the review, which must stay byte for byte the webhook's.
	b, err := json.Marshal(apiv1.EvaluateResponse{Review: out, Trace: wireTrace(res), SnapshotVersion: snap.Version, Candidate: candidate})
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
		if !pt.Matched {
			outcome := evaluator.OutcomeNotMatched
			if policyErr[pt.Policy] {
				outcome = evaluator.OutcomeError
			}
			out = append(out, apiv1.BindingTrace{Policy: pt.Policy, Reason: pt.Reason, Outcome: string(outcome)})
			continue
		}
		for _, bt := range pt.Bindings {
			t := apiv1.BindingTrace{
				Policy: pt.Policy, Binding: bt.Binding, Param: bt.Param,
				Matched: bt.Matched && bt.Outcome != evaluator.OutcomeNotMatched,
				Reason:  bt.Reason, Outcome: string(bt.Outcome),
				MatchConditions:  wireExpressions(bt.MatchConditions),
				Validations:      wireExpressions(bt.Validations),
				AuditAnnotations: wireExpressions(bt.AuditAnnotations),
				Cost:             bt.Cost,
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
