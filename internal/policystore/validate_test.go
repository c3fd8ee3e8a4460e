package policystore

import (
	"context"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

const vapHead = "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: p}\n"
const rules = "  matchConstraints:\n    resourceRules:\n    - {apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE], resources: [pods]}\n"

// Each case is refused with 422 and exactly these causes ("field: message"
// as the apiserver's Status renders them).
func TestInvalidObjectsNameEachField(t *testing.T) {
	tests := []struct {
		name   string
		doc    string
		causes []string // each cause as "<field>|<substring of message>"
	}{
		{"unknown field, with its path", vapHead + "spec:\n" + rules + "  validations:\n  - expresion: \"true\"\n",
			[]string{"spec.validations[0].expresion|unknown field"}},
		{"duplicate field", vapHead + "spec:\n" + rules + "  validations:\n  - {expression: \"true\"}\n  failurePolicy: Fail\n  failurePolicy: Ignore\n",
			[]string{"|"}},
		{"wrong type", vapHead + "spec:\n" + rules + "  validations: {expression: x}\n",
			[]string{"spec.validations|cannot decode"}},
		{"missing apiVersion", "kind: ConfigMap\nmetadata: {name: x}\n", []string{"apiVersion|Required value"}},
		{"missing kind", "apiVersion: v1\nmetadata: {name: x}\n", []string{"kind|Required value"}},
		{"unsupported version", "apiVersion: admissionregistration.k8s.io/v1beta1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: p}\n",
			[]string{"apiVersion|Unsupported value"}},
		{"missing name", "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {}\nspec:\n" + rules + "  validations: [{expression: \"true\"}]\n",
			[]string{"metadata.name|Required value"}},
		{"bad name", "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: Bad_Name}\nspec:\n" + rules + "  validations: [{expression: \"true\"}]\n",
			[]string{"metadata.name|Invalid value"}},
		{"namespace on a cluster-scoped kind", "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: p, namespace: x}\nspec:\n" + rules + "  validations: [{expression: \"true\"}]\n",
			[]string{"metadata.namespace|Forbidden"}},
		{"no validations and no audit annotations", vapHead + "spec:\n" + rules,
			[]string{"spec.validations|validations or auditAnnotations must contain at least one item"}},
		{"no matchConstraints", vapHead + "spec:\n  validations: [{expression: \"true\"}]\n",
			[]string{"spec.matchConstraints|Required value"}},
		{"rule without operations and resources", vapHead + "spec:\n  matchConstraints:\n    resourceRules: [{apiGroups: [\"\"], apiVersions: [v1]}]\n  validations: [{expression: \"true\"}]\n",
			[]string{"spec.matchConstraints.resourceRules[0].operations|Required value", "spec.matchConstraints.resourceRules[0].resources|Required value"}},
		{"bad operation and scope", vapHead + "spec:\n  matchConstraints:\n    resourceRules: [{apiGroups: [\"\"], apiVersions: [v1], resources: [pods], operations: [PATCH], scope: Global}]\n  validations: [{expression: \"true\"}]\n",
			[]string{"spec.matchConstraints.resourceRules[0].operations[0]|Unsupported value: \"PATCH\"", "spec.matchConstraints.resourceRules[0].scope|Unsupported value"}},
		{"bad reason and failurePolicy", vapHead + "spec:\n" + rules + "  failurePolicy: Maybe\n  validations: [{expression: \"true\", reason: Teapot}]\n",
			[]string{"spec.validations[0].reason|Unsupported value: \"Teapot\"", "spec.failurePolicy|Unsupported value: \"Maybe\""}},
		{"bad label selector", vapHead + "spec:\n  matchConstraints:\n    namespaceSelector: {matchExpressions: [{key: env, operator: In}]}\n    resourceRules:\n    - {apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE], resources: [pods]}\n  validations: [{expression: \"true\"}]\n",
			[]string{"spec.matchConstraints.namespaceSelector.matchExpressions[0].values|Required value"}},
		{"variables: bad and duplicate names", vapHead + "spec:\n" + rules + "  variables: [{name: 1x, expression: \"1\"}, {name: a, expression: \"1\"}, {name: a, expression: \"\"}]\n  validations: [{expression: \"true\"}]\n",
			[]string{"spec.variables[0].name|not a valid CEL identifier", "spec.variables[2].name|Duplicate value", "spec.variables[2].expression|Required value"}},
		{"match conditions: duplicate names", vapHead + "spec:\n" + rules + "  matchConditions: [{name: a, expression: \"true\"}, {name: a, expression: \"true\"}]\n  validations: [{expression: \"true\"}]\n",
			[]string{"spec.matchConditions[1].name|Duplicate value"}},
		{"audit annotation without key", vapHead + "spec:\n" + rules + "  auditAnnotations: [{valueExpression: \"'x'\"}]\n",
			[]string{"spec.auditAnnotations[0].key|Required value"}},
		{"binding: no policy name, no actions", "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: b}\nspec: {}\n",
			[]string{"spec.policyName|Required value", "spec.validationActions|Required value"}},
		{"binding: malformed cluster selector", "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: b, annotations: {portcullis.dev/cluster-selector: \"env in (prod\"}}\nspec: {policyName: p, validationActions: [Deny]}\n",
			[]string{"metadata.annotations[portcullis.dev/cluster-selector]|not a label selector"}},
		{"mutating binding: malformed cluster selector", "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicyBinding\nmetadata: {name: b, annotations: {portcullis.dev/cluster-selector: \"=prod\"}}\nspec: {policyName: p}\n",
			[]string{"metadata.annotations[portcullis.dev/cluster-selector]|not a label selector"}},
		{"binding: Deny with Warn, unknown action", "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: b}\nspec: {policyName: p, validationActions: [Deny, Warn, Log]}\n",
			[]string{"spec.validationActions[2]|Unsupported value: \"Log\"", "spec.validationActions|must not contain both Deny and Warn"}},
		{"binding: paramRef with name and selector, no action", "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: b}\nspec: {policyName: p, validationActions: [Deny], paramRef: {name: x, selector: {}}}\n",
			[]string{"spec.paramRef.name|Forbidden", "spec.paramRef.parameterNotFoundAction|Required value"}},
		{"mutating: no mutations, bad patch type", "apiVersion: admissionregistration.k8s.io/v1beta1\nkind: MutatingAdmissionPolicy\nmetadata: {name: m}\nspec:\n" + rules + "  mutations: [{patchType: Merge}]\n",
			[]string{"spec.mutations[0].patchType|Unsupported value: \"Merge\""}},
		{"mutating: DELETE cannot be matched", "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicy\nmetadata: {name: m}\nspec:\n  matchConstraints:\n    resourceRules: [{apiGroups: [\"\"], apiVersions: [v1], operations: [DELETE], resources: [pods]}]\n  mutations: [{patchType: JSONPatch, jsonPatch: {expression: \"[]\"}}]\n",
			[]string{"spec.matchConstraints.resourceRules[0].operations[0]|Unsupported value: \"DELETE\""}},
		{"mutating: authorizer", "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicy\nmetadata: {name: m}\nspec:\n" + rules + "  reinvocationPolicy: Never\n  mutations: [{patchType: ApplyConfiguration, applyConfiguration: {expression: \"authorizer.group('').resource('pods').check('get').allowed() ? Object{} : Object{}\"}}]\n",
			[]string{"spec.mutations[0].applyConfiguration.expression|authorizer and authorizer.requestResource are not supported"}},
		{"mutating: no reinvocationPolicy", "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicy\nmetadata: {name: m}\nspec:\n" + rules + "  mutations: [{patchType: JSONPatch, jsonPatch: {expression: \"[]\"}}]\n",
			[]string{"spec.reinvocationPolicy|Required value"}},
		{"mutating: CEL type error in a JSON patch", "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicy\nmetadata: {name: m}\nspec:\n" + rules + "  reinvocationPolicy: Never\n  mutations: [{patchType: JSONPatch, jsonPatch: {expression: \"'not a patch'\"}}]\n",
			[]string{"spec.mutations[0].jsonPatch.expression|"}},
		{"mutating v1alpha1: CEL syntax error in an apply configuration", "apiVersion: admissionregistration.k8s.io/v1alpha1\nkind: MutatingAdmissionPolicy\nmetadata: {name: m}\nspec:\n" + rules + "  reinvocationPolicy: IfNeeded\n  mutations: [{patchType: ApplyConfiguration, applyConfiguration: {expression: \"Object{spec: \"}}]\n",
			[]string{"spec.mutations[0].applyConfiguration.expression|compilation failed"}},
		{"mutating: variable and match condition errors", "apiVersion: admissionregistration.k8s.io/v1beta1\nkind: MutatingAdmissionPolicy\nmetadata: {name: m}\nspec:\n" + rules + "  reinvocationPolicy: Never\n  variables: [{name: v, expression: \"nope.x\"}]\n  matchConditions: [{name: c, expression: \"1\"}]\n  mutations: [{patchType: JSONPatch, jsonPatch: {expression: \"[]\"}}]\n",
			[]string{"spec.variables[0].expression|", "spec.matchConditions[0].expression|"}},
		{"mutating binding: bad selector", "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicyBinding\nmetadata: {name: b}\nspec: {policyName: p, matchResources: {objectSelector: {matchExpressions: [{key: a, operator: In}]}}}\n",
			[]string{"spec.matchResources.objectSelector.matchExpressions[0].values|Required value"}},
		{"mutating binding: DELETE cannot be matched, paramRef with name and selector", "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicyBinding\nmetadata: {name: b}\nspec: {policyName: p, paramRef: {name: x, selector: {}, parameterNotFoundAction: Deny}, matchResources: {resourceRules: [{apiGroups: [\"\"], apiVersions: [v1], operations: [DELETE], resources: [pods]}]}}\n",
			[]string{"spec.paramRef.name|Forbidden", "spec.matchResources.resourceRules[0].operations[0]|Unsupported value: \"DELETE\""}},
		{"mutating binding: no policy name", "apiVersion: admissionregistration.k8s.io/v1beta1\nkind: MutatingAdmissionPolicyBinding\nmetadata: {name: b}\nspec: {}\n",
			[]string{"spec.policyName|Required value"}},
		{"CEL syntax error", vapHead + "spec:\n" + rules + "  validations: [{expression: \"object.spec.replicas <\"}]\n",
			[]string{"spec.validations[0].expression|compilation failed"}},
		{"CEL type error in a message expression", vapHead + "spec:\n" + rules + "  validations: [{expression: \"true\", messageExpression: \"1 + 'a'\"}]\n",
			[]string{"spec.validations[0].messageExpression|"}},
		{"authorizer is refused", vapHead + "spec:\n" + rules + "  validations: [{expression: \"authorizer.group('').resource('pods').check('get').allowed()\"}]\n",
			[]string{"spec.validations[0].expression|authorizer and authorizer.requestResource are not supported"}},
		{"param without name", "apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: prod}\n", []string{"metadata.name|Required value"}},
		{"param with a bad namespace", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: Prod_1}\n", []string{"metadata.namespace|Invalid value"}},
		{"param with a bad label", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, labels: {\"a b\": c}}\n", []string{"metadata.labels|Invalid value"}},
		{"not a mapping", "- a\n- b\n", []string{"|must be a single YAML or JSON mapping"}},
		{"duplicate YAML key", "apiVersion: v1\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", []string{"|"}},
	}
	pool := pgtest.Pool(t)
	s := New(pool)
	tenant := pgtest.InsertTenant(t, pool)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Apply(context.Background(), tenant, "alice", []byte(tt.doc))
			e, ok := err.(*fault.Error)
			if !ok || e.Code != fault.Invalid {
				t.Fatalf("err = %v, want invalid", err)
			}
			st := fault.Status(err)
			if st.Code != 422 || st.Reason != "Invalid" {
				t.Fatalf("status %d %s", st.Code, st.Reason)
			}
			var got []string
			for _, c := range st.Details.Causes {
				got = append(got, c.Field+"|"+c.Message)
			}
			for _, want := range tt.causes {
				f, msg, _ := strings.Cut(want, "|")
				found := false
				for _, c := range st.Details.Causes {
					if (f == "" || c.Field == f) && strings.Contains(c.Message, msg) {
						found = true
					}
				}
				if !found {
					t.Errorf("missing cause %q in %q", want, got)
				}
			}
		})
	}
	if objs, _ := s.List(context.Background(), tenant, ListOptions{}); len(objs) != 0 {
		t.Fatalf("%d invalid objects were stored", len(objs))
	}
}
