package differential

import (
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// checkedMismatch are expressions where the type checker picks one
// overload from a checked type (optional(dyn).orValue(1.5) is a double)
// while the value at run time is of another type: cel-go calls the
// overload it was told to behind a guard on the argument types, so these
// fail with "no such overload" where converting by the run-time type would
// succeed. Each conversion function appears with a value of another type
// than the one its overload takes, next to the operators and functions
// whose overload is chosen the same way. spec.m holds k: "a", s: "5",
// n: 5, d: 2.5, b: true, l: [1, 2], mm: {a: 1}.
var checkedMismatch = []string{
	// string()
	"string(object.spec.m[?'k'].orValue(1.5)) == 'a'",
	"string(object.spec.m[?'k'].orValue(1)) == 'a'",
	"string(object.spec.m[?'k'].orValue(true)) == 'a'",
	"string(object.spec.m[?'n'].orValue('x')) == '5'",
	"string(object.spec.m[?'d'].orValue(1)) == '2.5'",
	"string(object.spec.m[?'b'].orValue(1.5)) == 'true'",
	// int()
	"int(object.spec.m[?'s'].orValue(1.5)) == 5",
	"int(object.spec.m[?'n'].orValue(1.5)) == 5",
	"int(object.spec.m[?'d'].orValue('7')) == 2",
	"int(object.spec.m[?'n'].orValue('7')) == 5",
	// uint()
	"uint(object.spec.m[?'n'].orValue(1.5)) == 5u",
	"uint(object.spec.m[?'s'].orValue(1)) == 5u",
	// double()
	"double(object.spec.m[?'n'].orValue('1.5')) == 5.0",
	"double(object.spec.m[?'s'].orValue(1)) == 5.0",
	"double(object.spec.m[?'d'].orValue(1)) == 2.5",
	// bool()
	"bool(object.spec.m[?'b'].orValue('true'))",
	"bool(object.spec.m[?'k'].orValue(true))",
	// bytes()
	"bytes(object.spec.m[?'n'].orValue('x')) == b'5'",
	"bytes(object.spec.m[?'k'].orValue('x')) == b'a'",
	// duration() and timestamp()
	"duration(object.spec.m[?'n'].orValue('1s')) > duration('0s')",
	"timestamp(object.spec.m[?'n'].orValue('2020-01-01T00:00:00Z')) > timestamp('2000-01-01T00:00:00Z')",
	// dyn(): one overload over dyn, no guard to fail
	"dyn(object.spec.m[?'k'].orValue(1.5)) == 'a'",
	"string(dyn(object.spec.m[?'k'].orValue(1.5))) == 'a'",
	// operators and functions whose overload is picked the same way
	"object.spec.m[?'s'].orValue(1.5) < object.spec.m[?'k'].orValue(2.5)",
	"object.spec.m[?'n'].orValue(1.5) <= object.spec.m[?'n'].orValue(2.5)",
	"string(-object.spec.m[?'n'].orValue(1.5)) == '-5'",
	"string(object.spec.m[?'k'].orValue(1.5) + object.spec.m[?'k'].orValue(2.5)) == 'aa'",
	"string(object.spec.m[?'n'].orValue(1.5) * object.spec.m[?'n'].orValue(2.5)) == '25'",
	"string(object.spec.m[?'n'].orValue(1.5) - object.spec.m[?'n'].orValue(2.5)) == '0'",
	"size(object.spec.m[?'l'].orValue('xy')) == 2",
	"object.spec.m[?'l'].orValue('xy').size() == 2",
	"'a' in object.spec.m[?'mm'].orValue(['x'])",
	"object.spec.m[?'l'].orValue(['x']).join(',') == '1,2'",
	"object.spec.m[?'n'].orValue('x').startsWith('5')",
	"object.spec.m[?'n'].orValue('x').matches('5')",
	"!object.spec.m[?'k'].orValue(true)",
	// the same through a variable of the checked type
	"[object.spec.m[?'k'].orValue(1.5)].all(v, string(v) == 'a')",
}

// overloadRequests are a custom resource (JSON in both engines) and a
// ConfigMap whose data holds the same string values, created.
func overloadRequests() []*request {
	m := map[string]any{"k": "a", "s": "5", "n": int64(5), "d": 2.5, "b": true,
		"l": []any{int64(1), int64(2)}, "mm": map[string]any{"a": int64(1)}}
	widget := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "web", "namespace": "default"},
		"spec":     map[string]any{"m": m}}
	er := &evaluator.Request{Kind: widgetGVK, Resource: widgetGVR, RequestKind: widgetGVK, RequestResource: widgetGVR,
		Name: "web", Namespace: "default", Operation: "CREATE", Object: sentObject(widgetGVK, runtime.DeepCopyJSON(widget))}
	opts := &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{Kind: "CreateOptions", APIVersion: "meta.k8s.io/v1"}}
	return []*request{withUser(er, opts)}
}

// variablePolicy declares expr's value as variable v, then reads it in
// use; v's checked type is what the expressions after it are checked with.
func variablePolicy(name, v, use string, f admissionregistrationv1.FailurePolicyType) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := typedPolicy(name, use, "validation", f)
	p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "v", Expression: v}}
	return p
}

func overloadWorld(p *admissionregistrationv1.ValidatingAdmissionPolicy) *world {
	w := &world{params: worldParams()}
	w.namespaces, w.inventory = worldNamespaces()
	w.policies = []*admissionregistrationv1.ValidatingAdmissionPolicy{p}
	w.bindings = []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: p.Name,
			ParamRef:          &admissionregistrationv1.ParamRef{Name: "limits", ParameterNotFoundAction: ptr(admissionregistrationv1.AllowAction)},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Audit}},
	}}
	return w
}

// TestCheckedOverloads holds expressions whose checked overload does not
// fit the value at run time to the plugin's answers, in every place an
// expression can be and through variables, under both failure policies.
func TestCheckedOverloads(t *testing.T) {
	reqs := overloadRequests()
	var st diffStats
	for i, expr := range checkedMismatch {
		for _, place := range []string{"validation", "messageExpression", "auditAnnotation", "matchCondition", "variable"} {
			for _, f := range []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore} {
				name := fmt.Sprintf("overload%d-%s-%s", i, place, f)
				runWorld(t, name+" "+expr, overloadWorld(typedPolicy(name, expr, place, f)), reqs, &st)
			}
		}
	}
	// A variable of a checked type that another expression converts.
	viaVariable := []struct{ v, use string }{
		{"object.spec.m[?'k'].orValue(1.5)", "string(variables.v) == 'a'"},
		{"object.spec.m[?'s'].orValue(1.5)", "int(variables.v) == 5"},
		{"object.spec.m[?'n'].orValue(1.5)", "int(variables.v) == 5"},
		{"object.spec.m[?'n'].orValue('x')", "double(variables.v) == 5.0"},
		{"object.spec.m[?'b'].orValue('x')", "bool(variables.v)"},
		{"object.spec.m[?'n'].orValue('x')", "uint(variables.v) == 5u"},
		{"object.spec.m[?'n'].orValue('x')", "bytes(variables.v) == b'5'"},
		{"object.spec.m[?'k'].orValue(1.5)", "dyn(variables.v) == 'a'"},
		{"object.spec.m[?'k'].orValue(1.5)", "variables.v < 2.0"},
		{"object.spec.m[?'l'].orValue('xy')", "size(variables.v) == 2"},
	}
	for i, c := range viaVariable {
		for _, f := range []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore} {
			name := fmt.Sprintf("overload-var%d-%s", i, f)
			runWorld(t, name+" "+c.v+" / "+c.use, overloadWorld(variablePolicy(name, c.v, c.use, f)), reqs, &st)
		}
	}
	t.Logf("%+v", st)
	// Both answers must occur: the cases that fail in cel-go and the
	// controls that do not.
	for what, n := range map[string]int{"denied": st.denied, "allowed": st.allowed, "errors": st.errors} {
		if n < 20 {
			t.Errorf("only %d %s cases", n, what)
		}
	}
}

// TestRedefinedVariable: a variable redefined under its own name that
// reads its earlier definition (the policy store refuses duplicate names;
// the plugin takes the last definition, checked with the earlier one's
// type). The self-read sits in a branch that is not taken, since the
// plugin would recurse into it without end.
func TestRedefinedVariable(t *testing.T) {
	reqs := overloadRequests()
	var st diffStats
	for _, f := range []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore} {
		name := "redefined-" + string(f)
		p := typedPolicy(name, "variables.v0", "validation", f)
		p.Spec.Variables = []admissionregistrationv1.Variable{
			{Name: "v0", Expression: "'a'"},
			{Name: "v0", Expression: "has(object.missing) ? variables.v0.startsWith('a') : object.missing == 'x'"},
		}
		runWorld(t, name, overloadWorld(p), reqs, &st)
	}
	if st.denied != 1 || st.allowed != 1 {
		t.Errorf("want one denial (Fail) and one allowed (Ignore): %+v", st)
	}
}
