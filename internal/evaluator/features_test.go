package evaluator

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const (
	allow     = admissionregistrationv1.AllowAction
	denyParam = admissionregistrationv1.DenyAction
)

func TestActionsAndAnnotations(t *testing.T) {
	fail := validationFull("false", "bad pod", "", "")
	failureJSON := func(actions string) string {
		return `[{"message":"bad pod","policy":"p","binding":"b","expressionIndex":0,"validationActions":` + actions + `}]`
	}
	runEvalCases(t, []evalCase{
		{name: "Warn gives a warning and allows", policies: pols(policy("p", fail)), bindings: binds(binding("b", "p", actions(warn))), req: podRequest("CREATE"),
			want: want{allowed: true, warnings: []string{warnMsg("p", "b", "bad pod")}, outcomes: outs(violation)}},
		{name: "Audit gives validation_failure and allows", policies: pols(policy("p", fail)), bindings: binds(binding("b", "p", actions(audit))), req: podRequest("CREATE"),
			want: want{allowed: true, annotations: []AuditAnnotation{{Key: validationFailureKey, Value: failureJSON(`["Audit"]`)}}, outcomes: outs(violation)}},
		{name: "Deny and Audit", policies: pols(policy("p", fail)), bindings: binds(binding("b", "p", actions(deny, audit))), req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "bad pod"), annotations: []AuditAnnotation{{Key: validationFailureKey, Value: failureJSON(`["Deny","Audit"]`)}}, outcomes: outs(violation)}},
		{name: "Warn and Audit", policies: pols(policy("p", fail)), bindings: binds(binding("b", "p", actions(warn, audit))), req: podRequest("CREATE"),
			want: want{allowed: true, warnings: []string{warnMsg("p", "b", "bad pod")}, annotations: []AuditAnnotation{{Key: validationFailureKey, Value: failureJSON(`["Warn","Audit"]`)}}, outcomes: outs(violation)}},
		{name: "Deny and Warn", policies: pols(policy("p", fail)), bindings: binds(binding("b", "p", actions(deny, warn))), req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "bad pod"), warnings: []string{warnMsg("p", "b", "bad pod")}, outcomes: outs(violation)}},
		{name: "runtime error with Warn only warns", policies: pols(policy("p", validation("object.x == 1"))), bindings: binds(binding("b", "p", actions(warn))), req: podRequest("CREATE"),
			want: want{allowed: true, warnings: []string{warnMsg("p", "b", "expression 'object.x == 1' resulted in error: no such key: x")}, outcomes: outs(errored)}},
		{name: "two failures warn in order", policies: pols(policy("p", validationFull("false", "one", "", ""), validationFull("false", "two", "", ""))), bindings: binds(binding("b", "p", actions(warn))), req: podRequest("CREATE"),
			want: want{allowed: true, warnings: []string{warnMsg("p", "b", "one"), warnMsg("p", "b", "two")}, outcomes: outs(violation)}},
		{name: "audit expression index counts validations", policies: pols(policy("p", validation("true"), validationFull("false", "bad pod", "", ""))), bindings: binds(binding("b", "p", actions(audit))), req: podRequest("CREATE"),
			want: want{allowed: true, annotations: []AuditAnnotation{{Key: validationFailureKey, Value: `[{"message":"bad pod","policy":"p","binding":"b","expressionIndex":1,"validationActions":["Audit"]}]`}}, outcomes: outs(violation)}},
		{name: "first policy by name gives the status", policies: pols(policy("z", validationFull("false", "from z", "", "")), policy("a", validationFull("false", "from a", "", ""))),
			bindings: binds(binding("bz", "z"), binding("ba", "a")), req: podRequest("CREATE"),
			want: want{message: denyMsg("a", "ba", "from a"), outcomes: outs(violation, violation)}},
		{name: "audit annotation published", policies: pols(policy("p", auditAnnotation("image", "string(object.spec.containers[0].image)"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{allowed: true, annotations: []AuditAnnotation{{Key: "p/image", Value: "nginx:1.25"}}, outcomes: outs(pass)}},
		{name: "audit annotation trimmed", policies: pols(policy("p", auditAnnotation("k", "'  v  '"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{allowed: true, annotations: []AuditAnnotation{{Key: "p/k", Value: "v"}}, outcomes: outs(pass)}},
		{name: "audit annotation null is excluded", policies: pols(policy("p", auditAnnotation("k", "null"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"), want: want{allowed: true, outcomes: outs(pass)}},
		{name: "audit annotation blank is excluded", policies: pols(policy("p", auditAnnotation("k", "'   '"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"), want: want{allowed: true, outcomes: outs(pass)}},
		{name: "audit annotation keys sorted", policies: pols(policy("p", auditAnnotation("z", "'1'"), auditAnnotation("a", "'2'"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{allowed: true, annotations: []AuditAnnotation{{Key: "p/a", Value: "2"}, {Key: "p/z", Value: "1"}}, outcomes: outs(pass)}},
		{name: "audit annotation duplicates across bindings collapse", policies: pols(policy("p", auditAnnotation("k", "'same'"))), bindings: binds(binding("b", "p"), binding("c", "p")), req: podRequest("CREATE"),
			want: want{allowed: true, annotations: []AuditAnnotation{{Key: "p/k", Value: "same"}}, outcomes: outs(pass, pass)}},
		{name: "audit annotation distinct values join", policies: pols(policy("p", paramKind("v1", "ConfigMap"), auditAnnotation("k", "string(params.metadata.name)"))),
			bindings: binds(binding("b", "p", paramRefSelector("", &metav1.LabelSelector{}, allow))),
			params:   []*unstructured.Unstructured{configMap("default", "one", nil, nil), configMap("default", "two", nil, nil)}, req: podRequest("CREATE"),
			want: want{allowed: true, annotations: []AuditAnnotation{{Key: "p/k", Value: "one, two"}}, outcomes: outs(pass, pass)}},
		{name: "audit annotation truncated at 10KiB", policies: pols(policy("p", auditAnnotation("k", "'"+strings.Repeat("x", 10*1024+5)+"'"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{allowed: true, annotations: []AuditAnnotation{{Key: "p/k", Value: strings.Repeat("x", 10*1024)}}, outcomes: outs(pass)}},
		{name: "audit annotation error with Fail denies", policies: pols(policy("p", auditAnnotation("k", "string(object.nope)"))), bindings: binds(binding("b", "p", actions(warn))), req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "expression 'string(object.nope)' resulted in error: no such key: nope"), outcomes: outs(errored)}},
		{name: "audit annotation error with Ignore is dropped", policies: pols(policy("p", auditAnnotation("k", "string(object.nope)"), failurePolicy(admissionregistrationv1.Ignore))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{allowed: true, outcomes: outs(pass)}},
		{name: "audit annotation of dyn type is a compile error", policies: pols(policy("p", auditAnnotation("k", "object.metadata.name"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "compilation error: must evaluate to one of [string null_type] but got dyn"), outcomes: outs(errored)}},
		{name: "audit annotation int is a compile error", policies: pols(policy("p", auditAnnotation("k", "1"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "compilation error: must evaluate to one of [string null_type] but got int"), outcomes: outs(errored)}},
		{name: "audit annotation reads namespaceObject", policies: pols(policy("p", auditAnnotation("uid", "namespaceObject.metadata.name + '/' + namespaceObject.metadata.labels['kubernetes.io/metadata.name']"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{allowed: true, annotations: []AuditAnnotation{{Key: "p/uid", Value: "default/default"}}, outcomes: outs(pass)}},
		{name: "audit annotation published even when denied", policies: pols(policy("p", fail, auditAnnotation("k", "'v'"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "bad pod"), annotations: []AuditAnnotation{{Key: "p/k", Value: "v"}}, outcomes: outs(violation)}},
	})
}

func TestVariablesAndMatchConditions(t *testing.T) {
	runEvalCases(t, []evalCase{
		{name: "variable used by validation", policies: pols(policy("p", variable("name", "object.metadata.name"), validation("variables.name == 'web'"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"), want: want{allowed: true, outcomes: outs(pass)}},
		{name: "variable uses earlier variable", policies: pols(policy("p", variable("a", "object.metadata.name"), variable("b", "variables.a + '!'"), validation("variables.b == 'web!'"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"), want: want{allowed: true, outcomes: outs(pass)}},
		{name: "variable cannot use later variable", policies: pols(policy("p", variable("a", "variables.b"), variable("b", "1"), validation("variables.b == 1"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"), want: want{allowed: true, outcomes: outs(pass)}},
		{name: "broken variable only fails when used", policies: pols(policy("p", variable("bad", "object.nope"), validation("true"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"), want: want{allowed: true, outcomes: outs(pass)}},
		{name: "broken variable fails the validation that uses it", policies: pols(policy("p", variable("bad", "object.nope"), validation("variables.bad == 1"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "expression 'variables.bad == 1' resulted in error: composited variable \"bad\" fails to evaluate: no such key: nope"), outcomes: outs(errored)}},
		{name: "variable compile error surfaces on use", policies: pols(policy("p", variable("bad", "1 +"), validation("variables.bad == 1"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "expression 'variables.bad == 1' resulted in error: composited variable \"bad\" fails to compile: compilation failed: ERROR: <input>:1:4: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | 1 +\n | ...^"), outcomes: outs(errored)}},
		{name: "variable in messageExpression", policies: pols(policy("p", variable("n", "object.metadata.name"), validationFull("false", "", "'pod ' + variables.n", ""))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "pod web"), outcomes: outs(violation)}},
		{name: "duplicate variable names: last wins", policies: pols(policy("p", variable("x", "1"), variable("x", "2"), validation("variables.x == 2"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"), want: want{allowed: true, outcomes: outs(pass)}},
		{name: "matchCondition false skips", policies: pols(policy("p", matchCondition("only-db", "object.metadata.name == 'db'"), validation("false"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"), want: want{allowed: true, outcomes: outs(OutcomeNotMatched)}},
		{name: "matchCondition true evaluates", policies: pols(policy("p", matchCondition("only-web", "object.metadata.name == 'web'"), validation("false"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"), want: podDenied},
		{name: "any false matchCondition skips", policies: pols(policy("p", matchCondition("t", "true"), matchCondition("f", "false"), validation("false"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"), want: want{allowed: true, outcomes: outs(OutcomeNotMatched)}},
		{name: "matchCondition error with Fail denies", policies: pols(policy("p", matchCondition("e", "object.nope == 1"), validation("true"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "expression 'object.nope == 1' resulted in error: no such key: nope"), outcomes: outs(errored)}},
		{name: "matchCondition error with Ignore skips", policies: pols(policy("p", matchCondition("e", "object.nope == 1"), validation("false"), failurePolicy(admissionregistrationv1.Ignore))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{allowed: true, outcomes: outs(OutcomeNotMatched)}},
		{name: "matchCondition false beats an earlier error", policies: pols(policy("p", matchCondition("e", "object.nope == 1"), matchCondition("f", "false"), validation("false"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"), want: want{allowed: true, outcomes: outs(OutcomeNotMatched)}},
		{name: "two matchCondition errors aggregate", policies: pols(policy("p", matchCondition("e1", "object.a == 1"), matchCondition("e2", "object.b == 1"), validation("true"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "[expression 'object.a == 1' resulted in error: no such key: a, expression 'object.b == 1' resulted in error: no such key: b]"), outcomes: outs(errored)}},
		{name: "matchCondition sees null namespaceObject", policies: pols(policy("p", matchCondition("ns", "namespaceObject == null"), validation("false"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"), want: podDenied},
		{name: "matchCondition can use variables", policies: pols(policy("p", variable("n", "object.metadata.name"), matchCondition("v", "variables.n == 'web'"), validation("false"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"), want: podDenied},
		{name: "matchCondition non-bool is a compile error", policies: pols(policy("p", matchCondition("s", "'x'"), validation("true"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "compilation error: must evaluate to bool but got string"), outcomes: outs(errored)}},
	})
}

func TestParamsAndNamespaces(t *testing.T) {
	cm := func(ns, name string, data map[string]any) *unstructured.Unstructured {
		return configMap(ns, name, map[string]string{"set": "a"}, data)
	}
	limit := policy("p", paramKind("v1", "ConfigMap"), validationFull("size(object.spec.containers) <= int(params.data.max)", "", "'at most ' + params.data.max + ' containers'", ""))
	runEvalCases(t, []evalCase{
		{name: "param by name in request namespace", policies: pols(limit), bindings: binds(binding("b", "p", paramRefName("", "limits", denyParam))),
			params: []*unstructured.Unstructured{cm("default", "limits", map[string]any{"max": "0"})}, req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "at most 0 containers"), outcomes: outs(violation)}},
		{name: "param by name passing", policies: pols(limit), bindings: binds(binding("b", "p", paramRefName("", "limits", denyParam))),
			params: []*unstructured.Unstructured{cm("default", "limits", map[string]any{"max": "5"})}, req: podRequest("CREATE"), want: want{allowed: true, outcomes: outs(pass)}},
		{name: "param by name in explicit namespace", policies: pols(limit), bindings: binds(binding("b", "p", paramRefName("global", "limits", denyParam))),
			params: []*unstructured.Unstructured{cm("global", "limits", map[string]any{"max": "0"})}, req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "at most 0 containers"), outcomes: outs(violation)}},
		{name: "missing param with Deny", policies: pols(limit), bindings: binds(binding("b", "p", paramRefName("", "nope", denyParam))), req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"), outcomes: outs(errored)}},
		{name: "missing param with Allow skips", policies: pols(limit), bindings: binds(binding("b", "p", paramRefName("", "nope", allow))), req: podRequest("CREATE"), want: want{allowed: true, outcomes: outs(OutcomeNoParams)}},
		{name: "param in another namespace is not found", policies: pols(limit), bindings: binds(binding("b", "p", paramRefName("", "limits", denyParam))),
			params: []*unstructured.Unstructured{cm("dev", "limits", map[string]any{"max": "0"})}, req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"), outcomes: outs(errored)}},
		{name: "params by selector evaluate each", policies: pols(limit), bindings: binds(binding("b", "p", paramRefSelector("", &metav1.LabelSelector{MatchLabels: map[string]string{"set": "a"}}, denyParam))),
			params: []*unstructured.Unstructured{cm("default", "a", map[string]any{"max": "5"}), cm("default", "b", map[string]any{"max": "0"})}, req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "at most 0 containers"), outcomes: outs(pass, violation)}},
		{name: "selector matching nothing with Deny", policies: pols(limit), bindings: binds(binding("b", "p", paramRefSelector("", &metav1.LabelSelector{MatchLabels: map[string]string{"set": "z"}}, denyParam))),
			params: []*unstructured.Unstructured{cm("default", "a", map[string]any{"max": "5"})}, req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"), outcomes: outs(errored)}},
		{name: "namespaced param for cluster-scoped request", policies: pols(policy("p", paramKind("v1", "ConfigMap"), validation("true"), rules(rule([]string{"*"}, []string{"*"}, []string{"*"}, []string{"*"})))),
			bindings: binds(binding("b", "p", paramRefName("", "limits", denyParam))), req: clusterRoleRequest(),
			want: want{message: denyMsgFor(clusterRoleRequest(), "p", "b", "failed to configure binding: cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"), outcomes: outs(errored)}},
		{name: "cluster-scoped param kind", policies: pols(policy("p", paramKind("example.com/v1", "Limits"), validation("object.metadata.name.size() <= params.spec.max"))),
			bindings: binds(binding("b", "p", paramRefName("", "global", denyParam))), params: []*unstructured.Unstructured{crParam("", "global", map[string]any{"max": int64(2)})}, req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "failed expression: object.metadata.name.size() <= params.spec.max"), outcomes: outs(violation)}},
		{name: "namespace on cluster-scoped paramRef is an error", policies: pols(policy("p", paramKind("example.com/v1", "Limits"), validation("true"))),
			bindings: binds(binding("b", "p", paramRefName("default", "global", denyParam))), params: []*unstructured.Unstructured{crParam("", "global", map[string]any{"max": int64(2)})}, req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "failed to configure binding: paramRef.namespace must not be provided for a cluster-scoped `paramKind`"), outcomes: outs(errored)}},
		{name: "name and selector together", policies: pols(limit), bindings: binds(binding("b", "p", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "x", Selector: &metav1.LabelSelector{}}
		})), req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "failed to configure binding: paramRef.name and paramRef.selector are mutually exclusive"), outcomes: outs(errored)}},
		{name: "neither name nor selector", policies: pols(limit), bindings: binds(binding("b", "p", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ParamRef = &admissionregistrationv1.ParamRef{}
		})), req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "failed to configure binding: one of name or selector must be provided"), outcomes: outs(errored)}},
		{name: "paramKind without paramRef has null params", policies: pols(policy("p", paramKind("v1", "ConfigMap"), validation("params == null"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"), want: want{allowed: true, outcomes: outs(pass)}},
		{name: "params without paramKind is a compile error", policies: pols(policy("p", validation("params == null"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "compilation error: compilation failed: ERROR: <input>:1:1: undeclared reference to 'params' (in container '')\n | params == null\n | ^"), outcomes: outs(errored)}},
		{name: "typed param sees policy paramKind and defaults", policies: pols(policy("p", paramKind("v1", "ConfigMap"), validation("params.kind == 'ConfigMap' && params.apiVersion == 'v1' && params.metadata.namespace == 'default'"))),
			bindings: binds(binding("b", "p", paramRefName("", "limits", denyParam))), params: []*unstructured.Unstructured{cm("default", "limits", nil)}, req: podRequest("CREATE"), want: want{allowed: true, outcomes: outs(pass)}},
		{name: "namespaceObject labels", policies: pols(policy("p", validation("namespaceObject.metadata.labels.env == 'prod'"))), bindings: binds(binding("b", "p")),
			namespaces: NamespaceMap{"default": namespaceObj("default", map[string]string{"env": "prod"})}, req: podRequest("CREATE"), want: want{allowed: true, outcomes: outs(pass)}},
		{name: "namespaceObject is null for cluster-scoped", policies: pols(policy("p", rules(rule([]string{"*"}, []string{"*"}, []string{"*"}, []string{"*"})), validation("namespaceObject == null"))), bindings: binds(binding("b", "p")), req: clusterRoleRequest(), want: want{allowed: true, outcomes: outs(pass)}},
		{name: "namespaceObject is null for a Namespace", policies: pols(policy("p", rules(rule([]string{"*"}, []string{"*"}, []string{"*"}, []string{"*"})), validation("namespaceObject == null"))), bindings: binds(binding("b", "p")),
			namespaces: NamespaceMap{"team-a": namespaceObj("team-a", nil)}, req: nsRequest("CREATE"), want: want{allowed: true, outcomes: outs(pass)}},
		{name: "namespaceObject name of an unknown namespace is known", policies: pols(policy("p", validation("namespaceObject.metadata.name == 'default'"))), bindings: binds(binding("b", "p")), namespaces: NamespaceMap{}, req: podRequest("CREATE"), want: want{allowed: true, outcomes: outs(pass)}},
		{name: "namespaceObject labels of an unknown namespace fail closed", policies: pols(policy("p", validation("namespaceObject.metadata.labels.env == 'prod'"))), bindings: binds(binding("b", "p")), namespaces: NamespaceMap{}, req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "namespace \"default\" is unknown: the namespace inventory lacks it, so its labels and object cannot be evaluated"), unknownNS: "default", outcomes: outs(errored)}},
		{name: "namespaceObject in a variable of an unknown namespace fails with Ignore open", policies: pols(policy("p", variable("ns", "namespaceObject"), validation("false"), failurePolicy(admissionregistrationv1.Ignore))), bindings: binds(binding("b", "p")), namespaces: NamespaceMap{}, req: podRequest("CREATE"),
			want: want{allowed: true, unknownNS: "default", outcomes: outs(errored)}},
		{name: "policy without namespaceObject ignores an unknown namespace", policies: pols(policy("p", validation("false"))), bindings: binds(binding("b", "p")), namespaces: NamespaceMap{}, req: podRequest("CREATE"), want: podDenied},
		{name: "namespaceObject declares UID, not uid", policies: pols(policy("p", validation("namespaceObject.metadata.uid == 'uid-default'"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "compilation error: compilation failed: ERROR: <input>:1:25: undefined field 'uid'\n | namespaceObject.metadata.uid == 'uid-default'\n | ........................^"), outcomes: outs(errored)}},
	})
}

func TestCostAndFailurePolicy(t *testing.T) {
	big := "[" + strings.Repeat("0,", 119) + "0]"
	perCall := big + ".all(a, " + big + ".all(b, " + big + ".all(c, a + b + c >= 0)))"
	runEvalCases(t, []evalCase{
		{name: "per-expression cost limit with Fail denies", policies: pols(policy("p", validation(perCall))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "expression '"+perCall+"' resulted in error: operation cancelled: actual cost limit exceeded"), outcomes: outs(errored)}},
		{name: "per-expression cost limit with Ignore allows", policies: pols(policy("p", validation(perCall), failurePolicy(admissionregistrationv1.Ignore))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"), want: want{allowed: true, outcomes: outs(errored)}},
		{name: "unrecognized failurePolicy on configuration error", policies: pols(policy("p", noConstraints(), failurePolicy("Sometimes"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{message: "pods \"web\" is forbidden: ValidatingAdmissionPolicy 'p' denied request: unrecognized failure policy: 'Sometimes'", outcomes: outs(errored)}},
		{name: "unrecognized failurePolicy on runtime error denies", policies: pols(policy("p", validation("object.x == 1"), failurePolicy("Sometimes"))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "expression 'object.x == 1' resulted in error: no such key: x"), outcomes: outs(errored)}},
	})
}
