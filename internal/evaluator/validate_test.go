package evaluator

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	deny  = admissionregistrationv1.Deny
	warn  = admissionregistrationv1.Warn
	audit = admissionregistrationv1.Audit
)

var (
	pass      = OutcomePass
	violation = OutcomeViolation
	errored   = OutcomeError
)

func TestValidateValidations(t *testing.T) {
	runEvalCases(t, []evalCase{
		{
			name:     "passing validation allows",
			policies: pols(policy("p", validation("object.metadata.name == 'web'"))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{allowed: true, outcomes: outs(pass)},
		},
		{
			name:     "failing validation denies with failed expression message",
			policies: pols(policy("p", validation("object.metadata.name == 'db'"))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{message: denyMsg("p", "b", "failed expression: object.metadata.name == 'db'"), outcomes: outs(violation)},
		},
		{
			name:     "failed expression message is trimmed",
			policies: pols(policy("p", validation("  false  "))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{message: denyMsg("p", "b", "failed expression: false"), outcomes: outs(violation)},
		},
		{
			name:     "static message is used and trimmed",
			policies: pols(policy("p", validationFull("false", "  no pods here  ", "", ""))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{message: denyMsg("p", "b", "no pods here"), outcomes: outs(violation)},
		},
		{
			name:     "messageExpression wins over message",
			policies: pols(policy("p", validationFull("false", "static", "'pod ' + object.metadata.name + ' rejected'", ""))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{message: denyMsg("p", "b", "pod web rejected"), outcomes: outs(violation)},
		},
		{
			name:     "messageExpression error falls back to message",
			policies: pols(policy("p", validationFull("false", "static", "object.missing", ""))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{message: denyMsg("p", "b", "static"), outcomes: outs(violation)},
		},
		{
			name:     "empty messageExpression result falls back to failed expression",
			policies: pols(policy("p", validationFull("1 > 2", "", "'   '", ""))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{message: denyMsg("p", "b", "failed expression: 1 > 2"), outcomes: outs(violation)},
		},
		{
			name:     "multi-line messageExpression is refused",
			policies: pols(policy("p", validationFull("false", "fallback", "'a\\nb'", ""))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{message: denyMsg("p", "b", "fallback"), outcomes: outs(violation)},
		},
		{
			name:     "reason Forbidden gives 403",
			policies: pols(policy("p", validationFull("false", "nope", "", metav1.StatusReasonForbidden))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{message: denyMsg("p", "b", "nope"), reason: metav1.StatusReasonForbidden, code: 403, outcomes: outs(violation)},
		},
		{
			name:     "reason Unauthorized gives 401",
			policies: pols(policy("p", validationFull("false", "nope", "", metav1.StatusReasonUnauthorized))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{message: denyMsg("p", "b", "nope"), reason: metav1.StatusReasonUnauthorized, code: 401, outcomes: outs(violation)},
		},
		{
			name:     "reason RequestEntityTooLarge gives 413",
			policies: pols(policy("p", validationFull("false", "nope", "", metav1.StatusReasonRequestEntityTooLarge))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{message: denyMsg("p", "b", "nope"), reason: metav1.StatusReasonRequestEntityTooLarge, code: 413, outcomes: outs(violation)},
		},
		{
			name:     "other reason gives 422",
			policies: pols(policy("p", validationFull("false", "nope", "", metav1.StatusReasonConflict))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{message: denyMsg("p", "b", "nope"), reason: metav1.StatusReasonConflict, code: 422, outcomes: outs(violation)},
		},
		{
			name:     "first failing validation of several gives the message",
			policies: pols(policy("p", validation("true"), validationFull("false", "second", "", ""), validationFull("false", "third", "", ""))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{message: denyMsg("p", "b", "second"), outcomes: outs(violation)},
		},
		{
			name:     "runtime error with Fail denies",
			policies: pols(policy("p", validation("object.spec.nothing == 1"))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{message: denyMsg("p", "b", "expression 'object.spec.nothing == 1' resulted in error: no such key: nothing"), outcomes: outs(errored)},
		},
		{
			name:     "runtime error with Ignore allows",
			policies: pols(policy("p", validation("object.spec.nothing == 1"), failurePolicy(admissionregistrationv1.Ignore))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{allowed: true, outcomes: outs(errored)},
		},
		{
			name:     "compile error with Fail denies at evaluation",
			policies: pols(policy("p", validation("object.metadata.name ==="))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "compilation error: compilation failed: ERROR: <input>:1:24: Syntax error: token recognition error at: '='\n | object.metadata.name ===\n | .......................^\nERROR: <input>:1:25: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | object.metadata.name ===\n | ........................^"),
				outcomes: outs(errored)},
		},
		{
			name:     "compile error with Ignore allows",
			policies: pols(policy("p", validation("nope("), failurePolicy(admissionregistrationv1.Ignore))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{allowed: true, outcomes: outs(errored)},
		},
		{
			name:     "non-bool validation is a compile error",
			policies: pols(policy("p", validation("'yes'"))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{message: denyMsg("p", "b", "compilation error: must evaluate to bool but got string"), outcomes: outs(errored)},
		},
		{
			name:     "authorizer use is a compile error",
			policies: pols(policy("p", validation("authorizer.group('').resource('pods').check('get').allowed()"))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{message: denyMsg("p", "b", "compilation error: "+errAuthorizerUnsupported), outcomes: outs(errored)},
		},
		{
			name:     "authorizer.requestResource use is a compile error",
			policies: pols(policy("p", validation("authorizer.requestResource.check('get').allowed()"))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{message: denyMsg("p", "b", "compilation error: "+errAuthorizerUnsupported), outcomes: outs(errored)},
		},
		{
			name:     "no validations allows",
			policies: pols(policy("p")),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{allowed: true, outcomes: outs(pass)},
		},
		{
			name:     "deny on DELETE uses oldObject and request name",
			policies: pols(policy("p", rules(rule([]string{"DELETE"}, []string{""}, []string{"v1"}, []string{"pods"})), validation("object == null && oldObject.metadata.name != 'web'"))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("DELETE"),
			want:     want{message: denyMsg("p", "b", "failed expression: object == null && oldObject.metadata.name != 'web'"), outcomes: outs(violation)},
		},
		{
			name:     "name falls back to object metadata.name",
			policies: pols(policy("p", validation("false"))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE", withName("")),
			want:     want{message: denyMsg("p", "b", "failed expression: false"), outcomes: outs(violation)},
		},
		{
			name:     "name falls back to generateName",
			policies: pols(policy("p", validation("false"))),
			bindings: binds(binding("b", "p")),
			req: podRequest("CREATE", withName(""), withObject(map[string]any{
				"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"generateName": "web-"}})),
			want: want{message: "pods \"web-\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed expression: false", outcomes: outs(violation)},
		},
		{
			name:     "name is Unknown without any",
			policies: pols(policy("p", validation("false"))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE", withName(""), withObject(map[string]any{"apiVersion": "v1", "kind": "Pod"})),
			want:     want{message: "pods \"Unknown\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed expression: false", outcomes: outs(violation)},
		},
		{
			name:     "request fields are visible",
			policies: pols(policy("p", validation("request.operation == 'CREATE' && request.userInfo.username == 'alice' && request.kind.kind == 'Pod' && request.resource.resource == 'pods' && request.namespace == 'default' && request.name == 'web' && request.dryRun == false && 'dev' in request.userInfo.groups"))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{allowed: true, outcomes: outs(pass)},
		},
		{
			name:     "string library functions",
			policies: pols(policy("p", validation("object.spec.containers.all(c, c.image.split(':')[0].lowerAscii() == 'nginx' && c.image.indexOf(':') > 0)"))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{allowed: true, outcomes: outs(pass)},
		},
		{
			name:     "regex and quantity libraries",
			policies: pols(policy("p", validation("object.metadata.name.matches('^w.b$') && quantity('500m').isLessThan(quantity('1'))"))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{allowed: true, outcomes: outs(pass)},
		},
		{
			name:     "optional fields",
			policies: pols(policy("p", validation("object.?spec.?hostNetwork.orValue(false) == false"))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{allowed: true, outcomes: outs(pass)},
		},
		{
			name:     "has on missing field",
			policies: pols(policy("p", validation("!has(object.spec.hostPID)"))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{allowed: true, outcomes: outs(pass)},
		},
	})
}
