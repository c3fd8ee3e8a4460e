package api

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/portcullis-dev/portcullis/internal/admission"
	"github.com/portcullis-dev/portcullis/internal/answer"
	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/fault"
)

// evaluateOne answers as one webhook: the validating one, or the mutating
// one. opts carry the inventory and the tenant's cost limit.
func evaluateOne(ctx context.Context, ans *apiv1.EvaluateResponse, rev *admission.Review, snap *evaluator.Snapshot,
	kind evaluator.Kind, opts []evaluator.Option) error {
	res, out := answer.Review(ctx, snap, kind, rev, append(slices.Clip(opts), evaluator.WithTrace())...)
	ans.Review, ans.Trace = out, wireTrace(res)
	ans.Evaluated = []string{kind.String()}
	return setObject(ans, res)
}

// evaluateChain answers as the apiserver's admission chain: mutating
// admission, then validating admission on the object it made. The
// mutating webhook is left out when no MutatingAdmissionPolicy binding
// matches the request (its answer would be an allowed no-op), and the
// validating one when the mutating one denied, as the apiserver stops at
// the first denial. A binding matches when its policy's and its own
// resource rules and selectors match and its matchConditions hold; a
// binding that failed to apply counts, since its failurePolicy may decide
// the answer. raw is rev as it was sent. Each webhook's evaluation gets
// opts (the inventory and the tenant's cost limit), as each of the two
// calls would.
func evaluateChain(ctx context.Context, ans *apiv1.EvaluateResponse, raw json.RawMessage, rev *admission.Review,
	snap *evaluator.Snapshot, opts []evaluator.Option) error {
	res, out := answer.Review(ctx, snap, evaluator.Mutating, rev, append(slices.Clip(opts), evaluator.WithTrace())...)
	if res.Allowed && !slices.ContainsFunc(res.Bindings, func(b evaluator.BindingResult) bool {
		return b.Outcome != evaluator.OutcomeNotMatched && b.Outcome != evaluator.OutcomeClusterSkipped
	}) {
		return evaluateOne(ctx, ans, rev, snap, evaluator.Validating, opts)
	}
	ans.Mutation = &apiv1.EvaluateStep{Review: out, Trace: wireTrace(res)}
	ans.Evaluated = []string{evaluator.Mutating.String()}
	if err := setObject(ans, res); err != nil || !res.Allowed {
		return err
	}
	if ans.Object != nil {
		// The validating webhook gets the review with the mutated object,
		// as the apiserver sends it, decoded as the webhook decodes it.
		mutated, err := withObject(raw, ans.Object)
		if err != nil {
			return err
		}
		labels := rev.Request.ClusterLabels // not part of the review: kept
		if rev, err = admission.Decode(mutated); err != nil {
			return fault.InvalidField("review", "with the mutated object: %v", err)
		}
		rev.Request.ClusterLabels = labels
	}
	vres, vout := answer.Review(ctx, snap, evaluator.Validating, rev, append(slices.Clip(opts), evaluator.WithTrace())...)
	ans.Review, ans.Trace = vout, wireTrace(vres)
	ans.Evaluated = append(ans.Evaluated, evaluator.Validating.String())
	return nil
}

// setObject sets the answer's object to a mutating result's final object.
func setObject(answer *apiv1.EvaluateResponse, res *evaluator.Result) error {
	if res.Object == nil {
		return nil
	}
	var err error
	answer.Object, err = json.Marshal(res.Object)
	return err
}

// withObject is the AdmissionReview raw with request.object replaced by
// obj, every other field as sent.
func withObject(raw json.RawMessage, obj json.RawMessage) ([]byte, error) {
	var review map[string]json.RawMessage
	if err := json.Unmarshal(raw, &review); err != nil {
		return nil, err
	}
	var request map[string]json.RawMessage
	if err := json.Unmarshal(review["request"], &request); err != nil {
		return nil, err
	}
	request["object"] = obj
	b, err := json.Marshal(request)
	if err != nil {
		return nil, err
	}
	review["request"] = b
	return json.Marshal(review)
}
