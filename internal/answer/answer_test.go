package answer_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-dev/portcullis/internal/admission"
	"github.com/portcullis-dev/portcullis/internal/answer"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

func review(apiVersion string) []byte {
	return []byte(`{"apiVersion": "` + apiVersion + `", "kind": "AdmissionReview", "request": {
	  "uid": "u-1",
	  "kind": {"group": "", "version": "v1", "kind": "Pod"},
	  "resource": {"group": "", "version": "v1", "resource": "pods"},
	  "name": "web", "namespace": "shop", "operation": "CREATE",
	  "userInfo": {"username": "alice"},
	  "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop"},
	             "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}`)
}

// snapshot holds a validating policy that requires a team label on Pods in
// namespaces labelled env=prod, and a mutating one that adds it.
func snapshot(t *testing.T) *evaluator.Snapshot {
	t.Helper()
	pods := &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
		}}}}
	s := evaluator.Compile(evaluator.Objects{
		Policies: []*admissionregistrationv1.ValidatingAdmissionPolicy{{
			ObjectMeta: metav1.ObjectMeta{Name: "team"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{MatchConstraints: pods,
				Validations: []admissionregistrationv1.Validation{{Expression: `has(object.metadata.labels) && "team" in object.metadata.labels`,
					Message: "the team label is required"}}},
		}},
		Bindings: []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{{
			ObjectMeta: metav1.ObjectMeta{Name: "team"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "team",
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				MatchResources: &admissionregistrationv1.MatchResources{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}},
		}},
		MutatingPolicies: []*admissionregistrationv1.MutatingAdmissionPolicy{{
			ObjectMeta: metav1.ObjectMeta{Name: "team"},
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{MatchConstraints: pods,
				Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
					ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
						Expression: `Object{metadata: Object.metadata{labels: {"team": "shop"}}}`}}}},
		}},
		MutatingBindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{{
			ObjectMeta: metav1.ObjectMeta{Name: "team"},
			Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "team"},
		}},
	}, evaluator.CompileOptions{})
	if errs := s.CompileErrors(); len(errs) > 0 {
		t.Fatal(errs)
	}
	return s
}

// TestReview answers as each webhook, in the review's version, and
// exactly as the webhook's two steps (Evaluate, then EncodeAnswer) do.
func TestReview(t *testing.T) {
	snap := snapshot(t)
	prod := evaluator.NamespaceMap{"shop": &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"env": "prod"}}}}
	tests := []struct {
		name        string
		apiVersion  string
		kind        evaluator.Kind
		opts        []evaluator.Option
		wantAllowed bool
		wantMessage string
		wantPatch   string
	}{
		{name: "validating, namespace selected", apiVersion: admission.V1, kind: evaluator.Validating,
			opts: []evaluator.Option{evaluator.WithNamespaces(prod)}, wantMessage: "the team label is required"},
		{name: "validating, namespace unknown", apiVersion: admission.V1, kind: evaluator.Validating,
			wantMessage: `namespace "shop" is unknown`},
		{name: "validating, v1beta1", apiVersion: admission.V1beta1, kind: evaluator.Validating,
			opts: []evaluator.Option{evaluator.WithNamespaces(prod)}, wantMessage: "the team label is required"},
		{name: "mutating", apiVersion: admission.V1, kind: evaluator.Mutating, wantAllowed: true,
			wantPatch: `[{"op":"add","path":"/metadata/labels","value":{"team":"shop"}}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rev, err := admission.Decode(review(tc.apiVersion))
			if err != nil {
				t.Fatal(err)
			}
			res, out := answer.Review(context.Background(), snap, tc.kind, rev, tc.opts...)
			var got admissionv1.AdmissionReview
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			r := got.Response
			if got.APIVersion != tc.apiVersion || r == nil || r.UID != "u-1" || r.Allowed != tc.wantAllowed || r.Allowed != res.Allowed {
				t.Fatalf("answer = %s, want apiVersion %s, allowed %v", out, tc.apiVersion, tc.wantAllowed)
			}
			if tc.wantMessage != "" && (r.Result == nil || !strings.Contains(r.Result.Message, tc.wantMessage)) {
				t.Fatalf("answer = %s, want a message with %q", out, tc.wantMessage)
			}
			if string(r.Patch) != tc.wantPatch {
				t.Fatalf("patch = %s, want %s", r.Patch, tc.wantPatch)
			}
			want := admission.EncodeAnswer(rev, snap.Evaluate(context.Background(), tc.kind, rev.Request, tc.opts...))
			if string(out) != string(want) {
				t.Fatalf("Review answered\n%s\nthe webhook's steps\n%s", out, want)
			}
		})
	}
}

func TestInventory(t *testing.T) {
	inv := evaluator.NamespaceMap{"shop": &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}}
	tests := []struct {
		name    string
		inv     evaluator.NamespaceLookup
		err     error
		wantLen int
	}{
		{name: "found", inv: inv, wantLen: 1},
		{name: "none", inv: nil, wantLen: 0},
		{name: "failed, with a partial inventory", inv: inv, err: errors.New("database away"), wantLen: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := answer.Inventory(tc.inv, tc.err).(evaluator.NamespaceMap)
			if !ok || got == nil || len(got) != tc.wantLen {
				t.Fatalf("Inventory = %#v, want a NamespaceMap of %d", got, tc.wantLen)
			}
		})
	}
}
