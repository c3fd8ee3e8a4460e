package evaluator

import (
	"context"
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// canonicalPod is the object as an apiserver would send it for a Pod: the
// encoding of the typed Pod it decodes into; false when it does not
// decode or is not a whole object.
func canonicalPod(object map[string]any) (map[string]any, bool) {
	if object == nil {
		return nil, false
	}
	var pod corev1.Pod
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object, &pod); err != nil {
		return nil, false
	}
	pod.APIVersion, pod.Kind = "v1", "Pod"
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&pod)
	if err != nil {
		return nil, false
	}
	return out, true
}

// FuzzCompileAndValidate compiles random expressions into every expression
// field of a policy and evaluates them against random objects. It must
// never panic, the result must be consistent, and the fast path must give
// exactly the result of cel-go alone.
func FuzzCompileAndValidate(f *testing.F) {
	seeds := []struct{ expr, obj string }{
		{"true", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"}}`},
		{"object.metadata.name == 'web'", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"x"}}}`},
		{"object.spec.containers.all(c, c.image.startsWith('r/'))", `{"spec":{"containers":[{"image":"r/a"},{"image":3}]}}`},
		{"variables.v", `{}`},
		{"params.data.x == '1'", `{"metadata":{}}`},
		{"namespaceObject.metadata.labels['a'] == 'b'", `{"metadata":{"namespace":"n"}}`},
		{"authorizer.group('').resource('pods').check('get').allowed()", `{}`},
		{"'a' + 1", `null`},
		{"[1,2,3].map(x, x * 2).exists(y, y > 5)", `[]`},
		{"quantity(object.q).isGreaterThan(quantity('1'))", `{"q":"2Gi"}`},
		{"object.?a.?b.orValue(1) > 0", `{"a":{"b":-1}}`},
		{"string(object.n) + 'x'", `{"n":1e400}`},
		{"size(object.s) > 2 && object.s.matches('^[a-z]+$')", `{"s":"abc\u0000"}`},
		{"1 +", `{`},
		{"dyn(1)", `{"metadata":{"labels":{"a":1}}}`},
		{"null", `{"metadata":{"name":""}}`},
		{"request.userInfo.username", `{}`},
	}
	for _, s := range seeds {
		f.Add(s.expr, s.obj)
	}
	f.Fuzz(func(t *testing.T, expr, obj string) {
		var object map[string]any
		if o, err := DecodeObject([]byte(obj)); err == nil {
			object = o
		}
		p := policy("p",
			variable("v", expr),
			matchCondition("m", "!("+expr+") || true"),
			validation(expr),
			validationFull("variables.v == true", expr, expr, ""),
			auditAnnotation("a", expr),
			paramKind("v1", "ConfigMap"),
			rules(rule([]string{"*"}, []string{"*"}, []string{"*"}, []string{"*"})),
		)
		ns := "n"
		if object == nil {
			ns = ""
		}
		s := Compile(Objects{
			Policies: pols(p),
			Bindings: binds(binding("b", "p", actions(admissionregistrationv1.Deny, admissionregistrationv1.Audit), paramRefName("", "cm", allow)),
				binding("w", "p", actions(admissionregistrationv1.Warn))),
			Params: []*unstructured.Unstructured{configMap("n", "cm", nil, map[string]any{"x": "1"})},
		}, CompileOptions{Mode: NewExpressions})
		_ = s.CompileErrors()
		// As a custom resource, CEL reads the object as it is. As a Pod,
		// cel-go reads its typed view and the fast interpreter its JSON:
		// they hold the same values when the JSON is what an apiserver
		// sends, the encoding of a Pod; another object a Pod request
		// cannot carry.
		reqs := []*Request{podRequest("CREATE", withObject(object), withOldObject(object), asWidget())}
		if pod, ok := canonicalPod(object); ok {
			reqs = append(reqs, podRequest("CREATE", withObject(pod), withOldObject(pod)))
		}
		for _, req := range reqs {
			req.Namespace = ns
			nsm := NamespaceMap{"n": namespaceObj("n", map[string]string{"a": "b"})}
			res := s.Evaluate(context.Background(), Validating, req, WithNamespaces(nsm), WithTrace())
			if res.Allowed != (res.Status == nil) || res.Allowed != (len(res.Denials) == 0) {
				t.Fatalf("inconsistent result: %+v", res)
			}
			fast := s.Evaluate(context.Background(), Validating, req, WithNamespaces(nsm))
			exact := s.Evaluate(context.Background(), Validating, req, WithNamespaces(nsm), func(c *evalConfig) { c.exact = true })
			if !reflect.DeepEqual(fast, exact) {
				t.Fatalf("fast path result differs (%v):\n fast %+v\nexact %+v", req.Kind, fast, exact)
			}
			if !reflect.DeepEqual(stripTrace(res), exact) {
				t.Fatalf("traced result differs (%v):\ntraced %+v\n exact %+v", req.Kind, res, exact)
			}
		}
	})
}
