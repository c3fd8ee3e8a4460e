package evaluator

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// An expression the fast interpreter takes keeps no cel-go program after
// compiling; cel-go plans it on first use, in the environment it was
// checked in (here with variables declared before it), and answers as the
// fast path does.
func TestProgramsArePlannedOnFirstUse(t *testing.T) {
	p := policy("lazy-p",
		variable("names", "object.spec.containers.map(c, c.name)"),
		variable("count", "size(variables.names)"),
		validationFull("variables.count < 2 && variables.names.all(n, n != 'forbidden-lazy')", "", "'too many: ' + string(variables.count)", ""))
	s := Compile(Objects{
		Policies: []*admissionregistrationv1.ValidatingAdmissionPolicy{p},
		Bindings: []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("lazy-b", "lazy-p")},
	}, CompileOptions{})
	if errs := s.CompileErrors(); len(errs) > 0 {
		t.Fatal(errs)
	}
	cp := s.policies[0]
	exprs := []*compiledExpr{&cp.variables[0].expr, &cp.variables[1].expr, &cp.validating.validations[0].expr}
	for _, ce := range exprs {
		if ce.fast == nil || ce.result.Program != nil || ce.shared == nil || ce.shared.lazy == nil {
			t.Fatalf("%s: fast %v, program kept %v: want a deferred program", ce.text, ce.fast != nil, ce.result.Program != nil)
		}
	}
	two := podRequest("CREATE")
	two.Object = pod("web", nil, "a:1", "b:1")
	for _, req := range []*Request{podRequest("CREATE"), two} {
		fast := s.Evaluate(context.Background(), Validating, req)
		exact := s.Evaluate(context.Background(), Validating, req, WithTrace()) // cel-go: plans the programs
		if fast.Allowed != exact.Allowed || (fast.Status == nil) != (exact.Status == nil) ||
			(fast.Status != nil && fast.Status.Message != exact.Status.Message) {
			t.Fatalf("fast path %v %v, cel-go %v %v", fast.Allowed, fast.Status, exact.Allowed, exact.Status)
		}
	}
	if exact := s.Evaluate(context.Background(), Validating, two, WithTrace()); exact.Allowed || exact.Status == nil {
		t.Fatal("two containers passed")
	}
	for _, ce := range exprs {
		p1, err := ce.program()
		if err != nil || p1 == nil {
			t.Fatalf("%s: %v", ce.text, err)
		}
		if p2, _ := ce.program(); p2 != p1 {
			t.Fatalf("%s: planned twice", ce.text)
		}
	}
}

// A variable redefined under its own name, reading its earlier definition,
// is checked with the earlier definition's type (a string here), so its
// deferred program must be planned again with that type too, not with its
// own (a bool, which has no startsWith). The plugin's answer is the
// evaluation error of its last definition.
func TestRedefinedVariableIsPlannedWithTheEarlierDefinition(t *testing.T) {
	p := policy("redef-p",
		variable("v0", "'a'"),
		variable("v0", "has(object.missing) ? variables.v0.startsWith('a') : object.missing == 'x'"),
		validation("variables.v0"))
	s := Compile(Objects{
		Policies: []*admissionregistrationv1.ValidatingAdmissionPolicy{p},
		Bindings: []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("redef-b", "redef-p")},
	}, CompileOptions{})
	if errs := s.CompileErrors(); len(errs) > 0 {
		t.Fatal(errs)
	}
	ce := &s.policies[0].variables[0].expr
	if ce.fast == nil || ce.shared == nil || ce.shared.lazy == nil {
		t.Fatal("want a deferred program for the redefinition")
	}
	if _, err := ce.program(); err != nil {
		t.Fatalf("planning the deferred program: %v", err)
	}
	res := s.Evaluate(context.Background(), Validating, podRequest("CREATE"))
	const want = `composited variable "v0" fails to evaluate: no such key: missing`
	if res.Allowed || res.Status == nil || !strings.Contains(res.Status.Message, want) {
		t.Fatalf("got allowed %v, %+v; want a denial with %q", res.Allowed, res.Status, want)
	}
}
