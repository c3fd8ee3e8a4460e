package webhook

import (
	"context"

	"github.com/portcullis-dev/portcullis/internal/admission"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// Answer evaluates a decoded review against a tenant's compiled policies and
// encodes the AdmissionReview the webhook sends back. The webhook handler
// and the admin API's evaluate call both use it, so that evaluate answers
// exactly what the webhook would. opts are passed to Validate (the admin
// API asks for a trace, which does not change the answer).
func Answer(ctx context.Context, rev *admission.Review, snap *evaluator.Snapshot, nss evaluator.NamespaceLookup,
	opts ...evaluator.ValidateOption) (*evaluator.Result, []byte) {
	res := snap.Validate(ctx, rev.Request, nss, opts...)
	resp := admission.Response{
		Allowed:          res.Allowed,
		Status:           res.Status,
		Warnings:         res.Warnings,
		AuditAnnotations: res.AuditAnnotations,
	}
	out, err := admission.Encode(rev.APIVersion, rev.UID, resp)
	if err != nil {
		panic(err) // only an unknown version, which Decode refuses
	}
	return res, out
}
