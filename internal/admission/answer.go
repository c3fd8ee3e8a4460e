package admission

import (
	"context"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// Answer evaluates a decoded review against a tenant's compiled policies and
// encodes the AdmissionReview the webhook sends back. The admin API's
// evaluate call uses it, and the webhook handler its two steps (Validate,
// then EncodeAnswer), so that evaluate answers exactly what the webhook
// would. mutating answers as the mutating webhook (/mutate) does, with
// Snapshot.Mutate; else as the validating one. opts are passed to the
// evaluator (the admin API asks for a trace, which does not change the
// answer).
func Answer(ctx context.Context, rev *Review, snap *evaluator.Snapshot, nss evaluator.NamespaceLookup, mutating bool,
	opts ...evaluator.ValidateOption) (*evaluator.Result, []byte) {
	var res *evaluator.Result
	if mutating {
		res = snap.Mutate(ctx, rev.Request, nss, opts...)
	} else {
		res = snap.Validate(ctx, rev.Request, nss, opts...)
	}
	return res, EncodeAnswer(rev, res)
}

// EncodeAnswer is the AdmissionReview answering rev with res, in rev's
// admission.k8s.io version; a Mutate result's patch goes with it.
func EncodeAnswer(rev *Review, res *evaluator.Result) []byte {
	resp := Response{
		Allowed:          res.Allowed,
		Status:           res.Status,
		Warnings:         res.Warnings,
		AuditAnnotations: res.AuditAnnotations,
		Patch:            res.Patch,
	}
	out, err := Encode(rev.APIVersion, rev.UID, resp)
	if err != nil {
		panic(err) // only an unknown version, which Decode refuses
	}
	return out
}
