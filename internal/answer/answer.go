// Package answer is where a webhook's answer to an AdmissionReview is
// made: the seam every caller of the evaluator shares. A caller decodes
// the review (internal/admission), takes the tenant's compiled snapshot
// (internal/policystore), charges the tenant's limits, and calls Review
// with the kind of webhook it answers as and its options: the cluster's
// inventory (evaluator.WithNamespaces), the tenant's cost limit
// (evaluator.WithCostLimit), a trace (evaluator.WithTrace). What it gets
// back is what the webhook would have sent, byte for byte.
//
// Like the evaluator it is pure: no store, no HTTP, no limits; the caller
// brings all of that (internal/archtest).
package answer

import (
	"context"

	"github.com/portcullis-dev/portcullis/internal/admission"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// Review evaluates rev's request against snap's policies of kind and
// encodes the AdmissionReview that webhook (/validate or /mutate) sends
// back, in rev's admission.k8s.io version. The webhook handler takes the
// same two steps apart, Snapshot.Evaluate and then admission.EncodeAnswer,
// only to run the first on the tenant's evaluation lane and to trace each;
// so the admin API's evaluate answers exactly what the webhook would.
func Review(ctx context.Context, snap *evaluator.Snapshot, kind evaluator.Kind, rev *admission.Review,
	opts ...evaluator.Option) (*evaluator.Result, []byte) {
	res := snap.Evaluate(ctx, kind, rev.Request, opts...)
	return res, admission.EncodeAnswer(rev, res)
}

// Inventory is the inventory to evaluate against, from a lookup of the
// cluster's: inv, or an empty one when the lookup failed or found none.
// Every namespace of an empty inventory is unknown, so bindings that need
// one follow their failurePolicy; the answer is never refused for it.
func Inventory(inv evaluator.NamespaceLookup, err error) evaluator.NamespaceLookup {
	if err != nil || inv == nil {
		return evaluator.NamespaceMap{}
	}
	return inv
}
