package evaluator

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// typeConfused are expressions whose answer depends on how the object is
// handed to CEL: the plugin's typed view of a built-in kind gives an error
// or another value than the JSON of a custom resource.
var typeConfused = []struct {
	expr       string
	typedErr   string // the error on a Pod; "" when it has a value
	typedValue bool
	jsonValue  bool // the value on a Widget
}{
	{"object.metadata.labels == 'x'", "no such overload", false, false},
	{"1 in object.metadata.labels", "unsupported map key type", false, false},
	{"object.spec.containers[0u].name == 'c0'", "unsupported index type", false, true},
	{"object.spec == 1", "no such overload", false, false},
	{"object.spec.containers[0] == 'c0'", "no such overload", false, false},
	// cel-go's list equality takes the element's error for equal.
	{"[object.spec] == [1]", "", true, false},
}

func TestFastPathDeclinesTypeConfusedExpressions(t *testing.T) {
	compositionEnvTemplate()
	obj := pod("web", map[string]any{"app": "web"}, "nginx:1.25")
	for _, tc := range typeConfused {
		p := fastProgramForTest(t, tc.expr)
		if p == nil {
			continue // declined when compiled
		}
		if v, _, ok := p.Eval(&fastEnvStub{object: obj}); ok {
			t.Errorf("%s: the fast interpreter answered %v; only cel-go knows the view", tc.expr, v)
		}
	}
}

func TestTypedObjectsForBuiltinKinds(t *testing.T) {
	for _, tc := range typeConfused {
		for _, f := range []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore} {
			for _, where := range []string{"validation", "messageExpression", "auditAnnotation", "matchCondition"} {
				var opt policyOpt
				switch where {
				case "validation":
					opt = validation(tc.expr)
				case "messageExpression":
					opt = validationFull("false", "static", "("+tc.expr+") ? 'yes' : 'no'", "")
				case "auditAnnotation":
					opt = auditAnnotation("k", "("+tc.expr+") ? 'yes' : 'no'")
				case "matchCondition":
					opt = func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
						matchCondition("m", tc.expr)(p)
						validation("false")(p)
					}
				}
				name := tc.expr + "/" + string(f) + "/" + where
				t.Run(name, func(t *testing.T) {
					s := Compile(Objects{
						Policies: pols(policy("p", opt, failurePolicy(f), rules(
							rule([]string{"CREATE"}, []string{""}, []string{"v1"}, []string{"pods"}),
							rule([]string{"CREATE"}, []string{"example.com"}, []string{"v1"}, []string{"widgets"})))),
						Bindings: binds(binding("b", "p", actions(admissionregistrationv1.Deny, admissionregistrationv1.Audit))),
					}, CompileOptions{})
					typed := validateBoth(t, s, podRequest("CREATE"))
					untyped := validateBoth(t, s, podRequest("CREATE", asWidget()))
					checkAnswer(t, "typed", where, f, tc.typedErr, tc.typedValue, typed)
					checkAnswer(t, "untyped", where, f, "", tc.jsonValue, untyped)
				})
			}
		}
	}
}

// checkAnswer checks the result of a policy with one type-confused
// expression in place where, under failurePolicy f, when the expression
// errs with errText or (errText "") has the value value.
func checkAnswer(t *testing.T, view, where string, f admissionregistrationv1.FailurePolicyType, errText string, value bool, res *Result) {
	t.Helper()
	if len(res.Bindings) != 1 {
		t.Fatalf("%s: bindings %+v", view, res.Bindings)
	}
	b := res.Bindings[0]
	failed := b.FailurePolicyApplied && strings.Contains(b.Error, errText)
	ignore := f == admissionregistrationv1.Ignore
	result := "no"
	if value {
		result = "yes"
	}
	var ok bool
	switch {
	case where == "messageExpression" && errText != "":
		// A message that errs leaves the static message, whatever the
		// failurePolicy.
		ok = !res.Allowed && strings.HasSuffix(res.Status.Message, ": static")
	case where == "messageExpression":
		ok = !res.Allowed && strings.HasSuffix(res.Status.Message, ": "+result)
	case errText == "" && where == "validation":
		ok = res.Allowed == value && !b.FailurePolicyApplied
	case errText == "" && where == "matchCondition":
		// true selects the failing validation.
		ok = res.Allowed != value && !b.FailurePolicyApplied
	case errText == "" && where == "auditAnnotation":
		ok = res.Allowed && len(res.AuditAnnotations) == 1 && res.AuditAnnotations[0].Value == result
	case where == "matchCondition" && ignore:
		// An erring condition under Ignore skips the binding.
		ok = res.Allowed && b.Outcome == OutcomeNotMatched
	case where == "auditAnnotation" && ignore:
		ok = res.Allowed && len(res.AuditAnnotations) == 0
	default:
		ok = res.Allowed == ignore && failed
	}
	if !ok {
		t.Fatalf("%s: want error %q or value %v under %s; allowed %v, status %+v, bindings %+v, annotations %v",
			view, errText, value, f, res.Allowed, res.Status, res.Bindings, res.AuditAnnotations)
	}
}

func TestUndecodableObjectFollowsFailurePolicy(t *testing.T) {
	broken := pod("web", map[string]any{"app": "web"}, "nginx:1.25")
	broken["spec"].(map[string]any)["containers"] = "not a list"
	const msg = "failed to prepare object variable for evaluation: the object does not decode as v1 Pod"
	for _, f := range []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore} {
		t.Run(string(f), func(t *testing.T) {
			// lowerAscii is cel-go's: the fast interpreter reaches cel-go,
			// which cannot decode the object, and the request is evaluated
			// again without the fast interpreter, where the whole list of
			// validations fails, as in the plugin.
			s := Compile(Objects{
				Policies: pols(policy("p", validation("object.metadata.name == 'web'"), validation("object.metadata.name.lowerAscii() == 'web'"), failurePolicy(f))),
				Bindings: binds(binding("b", "p")),
			}, CompileOptions{})
			before := fastRedos.Load()
			res := validateBoth(t, s, podRequest("CREATE", withObject(broken)))
			// The second evaluation is not the budget's: it is not counted.
			if fastRedos.Load() != before {
				t.Error("an undecodable object counted as an exact re-evaluation")
			}
			if res.Allowed != (f == admissionregistrationv1.Ignore) {
				t.Fatalf("allowed = %v under %s: %+v", res.Allowed, f, res.Status)
			}
			if len(res.Bindings) != 1 || !res.Bindings[0].FailurePolicyApplied || !strings.Contains(res.Bindings[0].Error, msg) {
				t.Fatalf("bindings %+v, want the error %q", res.Bindings, msg)
			}
			// A custom resource is read as it is.
			cr := validateBoth(t, Compile(Objects{
				Policies: pols(policy("p", validation("object.metadata.name.lowerAscii() == 'web'"), failurePolicy(f), widgetRules())),
				Bindings: binds(binding("b", "p")),
			}, CompileOptions{}), podRequest("CREATE", withObject(broken), asWidget()))
			if !cr.Allowed {
				t.Fatalf("custom resource: %+v", cr.Status)
			}
		})
	}
}

// connectKinds are the CONNECT requests whose objects are options kinds
// without ObjectMeta.
var connectKinds = []struct {
	resource, sub, kind string
	object              map[string]any
}{
	{"pods", "exec", "PodExecOptions", map[string]any{"command": []any{"sh"}, "stdin": true}},
	{"pods", "attach", "PodAttachOptions", map[string]any{"stdout": true}},
	{"pods", "portforward", "PodPortForwardOptions", map[string]any{"ports": []any{int64(8080)}}},
	{"pods", "proxy", "PodProxyOptions", map[string]any{"path": "/"}},
	{"nodes", "proxy", "NodeProxyOptions", map[string]any{"path": "/"}},
	{"services", "proxy", "ServiceProxyOptions", map[string]any{"path": "/"}},
}

func TestObjectSelectorOnKindsWithoutMetadata(t *testing.T) {
	selectors := []struct {
		name    string
		sel     *metav1.LabelSelector
		matches bool
	}{
		{"empty", &metav1.LabelSelector{}, true},
		{"In", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}}}}, false},
		{"NotIn", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"web"}}}}, false},
		{"DoesNotExist", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpDoesNotExist}}}, false},
		{"Exists", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}}, false},
	}
	for _, k := range connectKinds {
		for _, sel := range selectors {
			t.Run(k.resource+"/"+k.sub+"/"+sel.name, func(t *testing.T) {
				obj := map[string]any{"apiVersion": "v1", "kind": k.kind}
				for key, v := range k.object {
					obj[key] = v
				}
				req := podRequest("CONNECT", withObject(obj),
					withResource(schema.GroupVersionResource{Version: "v1", Resource: k.resource}, schema.GroupVersionKind{Version: "v1", Kind: k.kind}, k.sub))
				if k.resource == "nodes" {
					req.Namespace = ""
				}
				s := Compile(Objects{
					Policies: pols(policy("p", validation("false"), objSelector(sel.sel),
						rules(rule([]string{"CONNECT"}, []string{""}, []string{"v1"}, []string{k.resource + "/" + k.sub})))),
					Bindings: binds(binding("b", "p")),
				}, CompileOptions{})
				res := validateBoth(t, s, req)
				if res.Allowed == sel.matches {
					t.Fatalf("allowed = %v, want the policy to match: %v", res.Allowed, sel.matches)
				}
			})
		}
	}
	// A custom resource without metadata has empty labels, which
	// DoesNotExist matches.
	s := Compile(Objects{
		Policies: pols(policy("p", validation("false"), widgetRules(), objSelector(selectors[3].sel))),
		Bindings: binds(binding("b", "p")),
	}, CompileOptions{})
	if res := validateBoth(t, s, podRequest("CREATE", withObject(map[string]any{"spec": map[string]any{}}), asWidget())); res.Allowed {
		t.Fatal("DoesNotExist does not match a custom resource without labels")
	}
}
