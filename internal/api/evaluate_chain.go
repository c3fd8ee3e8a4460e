package api

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/portcullis-dev/portcullis/internal/admission"
	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/fault"
)

// evaluateOne answers as one webhook: the validating one, or the mutating
// one.
func evaluateOne(ctx context.Context, answer *apiv1.EvaluateResponse, rev *admission.Review, snap *evaluator.Snapshot,
	nss evaluator.NamespaceLookup, mutate bool, opts []evaluator.ValidateOption) error {
	res, out := admission.Answer(ctx, rev, snap, nss, mutate, append(slices.Clip(opts), evaluator.WithTrace())...)
	answer.Review, answer.Trace = out, wireTrace(res)
	answer.Evaluated = []string{"validate"}
	if mutate {
		answer.Evaluated = []string{"mutate"}
	}
	return setObject(answer, res)
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
// opts (the tenant's cost limit), as each of the two calls would.
func evaluateChain(ctx context.Context, answer *apiv1.EvaluateResponse, raw json.RawMessage, rev *admission.Review,
	snap *evaluator.Snapshot, nss evaluator.NamespaceLookup, opts []evaluator.ValidateOption) error {
	res, out := admission.Answer(ctx, rev, snap, nss, true, append(slices.Clip(opts), evaluator.WithTrace())...)
	if res.Allowed && !slices.ContainsFunc(res.Bindings, func(b evaluator.BindingResult) bool {
		return b.Outcome != evaluator.OutcomeNotMatched && b.Outcome != evaluator.OutcomeClusterSkipped
	}) {
		return evaluateOne(ctx, answer, rev, snap, nss, false, opts)
	}
	answer.Mutation = &apiv1.EvaluateStep{Review: out, Trace: wireTrace(res)}
	answer.Evaluated = []string{"mutate"}
	if err := setObject(answer, res); err != nil || !res.Allowed {
		return err
	}
	if answer.Object != nil {
		// The validating webhook gets the review with the mutated object,
		// as the apiserver sends it, decoded as the webhook decodes it.
		mutated, err := withObject(raw, answer.Object)
		if err != nil {
			return err
		}
		labels := rev.Request.ClusterLabels // not part of the review: kept
		if rev, err = admission.Decode(mutated); err != nil {
			return fault.InvalidField("review", "with the mutated object: %v", err)
		}
		rev.Request.ClusterLabels = labels
	}
	vres, vout := admission.Answer(ctx, rev, snap, nss, false, append(slices.Clip(opts), evaluator.WithTrace())...)
	answer.Review, answer.Trace = vout, wireTrace(vres)
	answer.Evaluated = append(answer.Evaluated, "validate")
	return nil
}

// setObject sets the answer's object to a Mutate result's final object.
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
