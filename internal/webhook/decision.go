package webhook

import (
	"net/http"

	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// The recorder stores what it is handed and knows nothing of the evaluator
// (the design's import rules), so the handler copies what a decision keeps
// into the recorder's own types. This runs on every request: the strings
// and message lists are shared, not copied, which costs one allocation for
// the bindings and one for the audit annotations, each only when there are
// any. The evaluator never changes a Result it has returned.

func fillRequest(d *decisions.Decision, req *evaluator.Request) {
	d.UID = req.UID
	d.Operation = string(req.Operation)
	d.Group, d.Version, d.Resource, d.SubResource = req.Resource.Group, req.Resource.Version, req.Resource.Resource, req.SubResource
	d.Kind = req.Kind.Kind
	d.Namespace, d.Name = req.Namespace, req.Name
	d.UserName, d.UserGroups = req.UserInfo.Username, req.UserInfo.Groups
	d.DryRun = req.DryRun
}

// fillResult records an evaluated request's answer in d.
func fillResult(d *decisions.Decision, res *evaluator.Result) {
	d.HTTPStatus = http.StatusOK
	d.SetPatch(res.Patch)
	d.Warnings = res.Warnings
	d.AuditAnnotations = decisionAnnotations(res.AuditAnnotations)
	d.Bindings = decisionBindings(res.Bindings)
	d.UnknownNamespace = res.UnknownNamespace
	for i := range res.Bindings {
		d.TimedOut = d.TimedOut || res.Bindings[i].Timeout
	}
	switch {
	case !res.Allowed:
		d.Verdict = decisions.VerdictDenied
	case len(res.Warnings) > 0:
		d.Verdict = decisions.VerdictWarned
	default:
		d.Verdict = decisions.VerdictAllowed
	}
	if res.Status != nil {
		d.Code, d.Reason, d.Message = res.Status.Code, string(res.Status.Reason), res.Status.Message
	}
}

func decisionBindings(bs []evaluator.BindingResult) []decisions.BindingRecord {
	if len(bs) == 0 {
		return nil
	}
	out := make([]decisions.BindingRecord, len(bs))
	for i := range bs {
		b := &bs[i]
		out[i] = decisions.BindingRecord{
			Policy: b.Policy, Binding: b.Binding, Param: b.Param, Outcome: string(b.Outcome),
			Denied: b.Denied, FailurePolicyApplied: b.FailurePolicyApplied, Timeout: b.Timeout,
			Error: b.Error, Messages: b.Messages, Mutated: b.Mutated, Reinvoked: b.Reinvoked,
		}
	}
	return out
}

func decisionAnnotations(as []evaluator.AuditAnnotation) []decisions.AuditAnnotation {
	if len(as) == 0 {
		return nil
	}
	out := make([]decisions.AuditAnnotation, len(as))
	for i, a := range as {
		out[i] = decisions.AuditAnnotation{Key: a.Key, Value: a.Value}
	}
	return out
}
