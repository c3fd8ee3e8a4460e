package webhook

import (
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// The recorder counts a binding as matched unless its outcome is the
// evaluator's NotMatched or ClusterSkipped, which it spells on its own.
func TestOutcomeNotMatchedIsTheEvaluators(t *testing.T) {
	if decisions.OutcomeNotMatched != string(evaluator.OutcomeNotMatched) {
		t.Fatalf("decisions.OutcomeNotMatched = %q, the evaluator's is %q", decisions.OutcomeNotMatched, evaluator.OutcomeNotMatched)
	}
	if decisions.OutcomeClusterSkipped != string(evaluator.OutcomeClusterSkipped) {
		t.Fatalf("decisions.OutcomeClusterSkipped = %q, the evaluator's is %q", decisions.OutcomeClusterSkipped, evaluator.OutcomeClusterSkipped)
	}
}

// A decision's endpoint is its handler's Kind by name: the names the
// recorder stores and the metrics label are the evaluator's.
func TestEndpointIsTheKindsName(t *testing.T) {
	if decisions.EndpointValidate != evaluator.Validating.String() || decisions.EndpointMutate != evaluator.Mutating.String() {
		t.Fatalf("decisions' endpoints %q and %q, the evaluator's kinds %q and %q", decisions.EndpointValidate,
			decisions.EndpointMutate, evaluator.Validating, evaluator.Mutating)
	}
}

// Every field of a stored binding comes from the evaluator's result: one
// added to BindingRecord and forgotten here would stay zero.
func TestFillResultCopiesEveryField(t *testing.T) {
	res := &evaluator.Result{
		Allowed:  false,
		Status:   &metav1.Status{Code: 403, Reason: metav1.StatusReasonForbidden, Message: "no"},
		Warnings: []string{"w"},
		AuditAnnotations: []evaluator.AuditAnnotation{
			{Key: "p/k", Value: "v"}, {Key: "p/k", Value: "last"},
		},
		Bindings: []evaluator.BindingResult{{
			Policy: "p", Binding: "b", Param: "ns/param", Outcome: evaluator.OutcomeError,
			Actions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			Denied:  true, FailurePolicyApplied: true, Timeout: true, Error: "e", Messages: []string{"m"},
			Mutated: true, Reinvoked: true,
		}},
		UnknownNamespace: "ghost",
		Patch:            []byte(`[{"op":"remove","path":"/a"}]`),
	}
	var d decisions.Decision
	fillResult(&d, res)
	want := decisions.BindingRecord{Policy: "p", Binding: "b", Param: "ns/param", Outcome: "Error",
		Denied: true, FailurePolicyApplied: true, Timeout: true, Error: "e", Messages: []string{"m"},
		Mutated: true, Reinvoked: true}
	if len(d.Bindings) != 1 || !reflect.DeepEqual(d.Bindings[0], want) {
		t.Fatalf("bindings = %+v, want %+v", d.Bindings, want)
	}
	v := reflect.ValueOf(d.Bindings[0])
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("BindingRecord.%s is not filled", v.Type().Field(i).Name)
		}
	}
	wantAnns := []decisions.AuditAnnotation{{Key: "p/k", Value: "v"}, {Key: "p/k", Value: "last"}}
	if !reflect.DeepEqual(d.AuditAnnotations, wantAnns) {
		t.Errorf("audit annotations = %+v, want %+v in order", d.AuditAnnotations, wantAnns)
	}
	if d.Verdict != decisions.VerdictDenied || d.HTTPStatus != 200 || d.Code != 403 || d.Reason != "Forbidden" ||
		d.Message != "no" || !d.TimedOut || d.UnknownNamespace != "ghost" || len(d.Warnings) != 1 || string(d.Patch) != string(res.Patch) {
		t.Errorf("decision = %+v", d)
	}
}

// The copy runs on every request: one allocation for the bindings, one for
// the audit annotations, none when there are neither.
func TestFillResultAllocations(t *testing.T) {
	res := &evaluator.Result{
		Allowed:          true,
		AuditAnnotations: []evaluator.AuditAnnotation{{Key: "k", Value: "v"}},
		Bindings:         make([]evaluator.BindingResult, 10),
	}
	var d decisions.Decision
	if n := testing.AllocsPerRun(100, func() { fillResult(&d, res) }); n != 2 {
		t.Errorf("%v allocations with bindings and annotations, want 2", n)
	}
	empty := &evaluator.Result{Allowed: true}
	if n := testing.AllocsPerRun(100, func() { fillResult(&d, empty) }); n != 0 {
		t.Errorf("%v allocations without bindings, want 0", n)
	}
}
