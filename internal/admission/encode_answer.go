package admission

import "github.com/portcullis-dev/portcullis/internal/evaluator"

// EncodeAnswer is the AdmissionReview answering rev with res, in rev's
// admission.k8s.io version; a mutating result's patch goes with it. The
// answer itself is made elsewhere (internal/answer): this package decodes
// and encodes, it does not decide.
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
