package evaluator

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Builders for table tests. Each returns a fresh object.

type policyOpt func(*admissionregistrationv1.ValidatingAdmissionPolicy)

func policy(name string, opts ...policyOpt) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"CREATE", "UPDATE"}, []string{""}, []string{"v1"}, []string{"pods"})},
			},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func rule(ops, groups, versions, resources []string) admissionregistrationv1.NamedRuleWithOperations {
	r := admissionregistrationv1.NamedRuleWithOperations{}
	for _, o := range ops {
		r.Operations = append(r.Operations, admissionregistrationv1.OperationType(o))
	}
	r.APIGroups, r.APIVersions, r.Resources = groups, versions, resources
	return r
}

func validation(expr string) policyOpt {
	return func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		p.Spec.Validations = append(p.Spec.Validations, admissionregistrationv1.Validation{Expression: expr})
	}
}

func validationFull(expr, message, messageExpression string, reason metav1.StatusReason) policyOpt {
	return func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		v := admissionregistrationv1.Validation{Expression: expr, Message: message, MessageExpression: messageExpression}
		if reason != "" {
			v.Reason = &reason
		}
		p.Spec.Validations = append(p.Spec.Validations, v)
	}
}

func variable(name, expr string) policyOpt {
	return func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		p.Spec.Variables = append(p.Spec.Variables, admissionregistrationv1.Variable{Name: name, Expression: expr})
	}
}

func matchCondition(name, expr string) policyOpt {
	return func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		p.Spec.MatchConditions = append(p.Spec.MatchConditions, admissionregistrationv1.MatchCondition{Name: name, Expression: expr})
	}
}

func auditAnnotation(key, expr string) policyOpt {
	return func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		p.Spec.AuditAnnotations = append(p.Spec.AuditAnnotations, admissionregistrationv1.AuditAnnotation{Key: key, ValueExpression: expr})
	}
}

func failurePolicy(f admissionregistrationv1.FailurePolicyType) policyOpt {
	return func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Spec.FailurePolicy = &f }
}

func paramKind(apiVersion, kind string) policyOpt {
	return func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: apiVersion, Kind: kind}
	}
}

func rules(rs ...admissionregistrationv1.NamedRuleWithOperations) policyOpt {
	return func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Spec.MatchConstraints.ResourceRules = rs }
}

func excludeRules(rs ...admissionregistrationv1.NamedRuleWithOperations) policyOpt {
	return func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		p.Spec.MatchConstraints.ExcludeResourceRules = rs
	}
}

func constraints(f func(*admissionregistrationv1.MatchResources)) policyOpt {
	return func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { f(p.Spec.MatchConstraints) }
}

func noConstraints() policyOpt {
	return func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Spec.MatchConstraints = nil }
}

type bindingOpt func(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)

func binding(name, policyName string, opts ...bindingOpt) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policyName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	for _, o := range opts {
		o(b)
	}
	return b
}

func actions(a ...admissionregistrationv1.ValidationAction) bindingOpt {
	return func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) { b.Spec.ValidationActions = a }
}

func matchResources(f func(*admissionregistrationv1.MatchResources)) bindingOpt {
	return func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
		b.Spec.MatchResources = &admissionregistrationv1.MatchResources{}
		f(b.Spec.MatchResources)
	}
}

func paramRefName(namespace, name string, notFound admissionregistrationv1.ParameterNotFoundActionType) bindingOpt {
	return func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
		b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: name, Namespace: namespace, ParameterNotFoundAction: &notFound}
	}
}

func paramRefSelector(namespace string, sel *metav1.LabelSelector, notFound admissionregistrationv1.ParameterNotFoundActionType) bindingOpt {
	return func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
		b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Selector: sel, Namespace: namespace, ParameterNotFoundAction: &notFound}
	}
}

func configMap(namespace, name string, labels map[string]string, data map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name},
		"data":     data,
	}}
	if namespace != "" {
		u.SetNamespace(namespace)
	}
	if labels != nil {
		u.SetLabels(labels)
	}
	return u
}

func crParam(namespace, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Limits",
		"metadata": map[string]any{"name": name},
		"spec":     spec,
	}}
	if namespace != "" {
		u.SetNamespace(namespace)
	}
	return u
}

func namespaceObj(name string, labels map[string]string) *corev1.Namespace {
	l := map[string]string{"kubernetes.io/metadata.name": name}
	for k, v := range labels {
		l[k] = v
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l, UID: types.UID("uid-" + name)}}
}

var podGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
var podGVK = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}

type reqOpt func(*Request)

func podRequest(op string, opts ...reqOpt) *Request {
	r := &Request{
		Kind: podGVK, Resource: podGVR, RequestKind: podGVK, RequestResource: podGVR,
		Name: "web", Namespace: "default", Operation: admissionregistrationv1.OperationType(op),
		UserInfo: authenticationv1.UserInfo{Username: "alice", Groups: []string{"dev", "system:authenticated"}},
	}
	if op != "DELETE" {
		r.Object = pod("web", map[string]any{"app": "web"}, "nginx:1.25")
	}
	if op == "UPDATE" || op == "DELETE" {
		r.OldObject = pod("web", map[string]any{"app": "web"}, "nginx:1.24")
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

func pod(name string, labels map[string]any, images ...string) map[string]any {
	var containers []any
	for i, img := range images {
		containers = append(containers, map[string]any{"name": fmt.Sprintf("c%d", i), "image": img})
	}
	md := map[string]any{"name": name, "namespace": "default"}
	if labels != nil {
		md["labels"] = labels
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": md,
		"spec":     map[string]any{"containers": containers},
	}
}

func withNamespace(ns string) reqOpt {
	return func(r *Request) {
		r.Namespace = ns
		if r.Object != nil {
			r.Object["metadata"].(map[string]any)["namespace"] = ns
		}
	}
}

// widgetGVR and widgetGVK are a custom resource's: the plugin hands its
// objects to CEL as their JSON, where a built-in kind's are typed.
var (
	widgetGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
)

// asWidget makes the request's objects a custom resource's, for tests
// whose objects have fields no built-in kind has.
func asWidget() reqOpt {
	return func(r *Request) {
		withResource(widgetGVR, widgetGVK, "")(r)
		for _, o := range []map[string]any{r.Object, r.OldObject} {
			if o != nil {
				o["apiVersion"], o["kind"] = "example.com/v1", "Widget"
			}
		}
	}
}

// widgetRules matches the widgets of asWidget.
func widgetRules() policyOpt {
	return rules(rule([]string{"CREATE", "UPDATE"}, []string{"example.com"}, []string{"v1"}, []string{"widgets"}))
}

func withObject(o map[string]any) reqOpt    { return func(r *Request) { r.Object = o } }
func withOldObject(o map[string]any) reqOpt { return func(r *Request) { r.OldObject = o } }
func withName(n string) reqOpt              { return func(r *Request) { r.Name = n } }

func withResource(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, sub string) reqOpt {
	return func(r *Request) {
		r.Resource, r.RequestResource, r.Kind, r.RequestKind = gvr, gvr, gvk, gvk
		r.SubResource, r.RequestSubResource = sub, sub
	}
}

// want is the expected outcome of one case. Every field is compared.
type want struct {
	allowed     bool
	message     string // Status.Message; "" when allowed
	reason      metav1.StatusReason
	code        int32
	warnings    []string
	annotations []AuditAnnotation
	unknownNS   string
	outcomes    []Outcome // per BindingResult, in order
}

type evalCase struct {
	name       string
	policies   []*admissionregistrationv1.ValidatingAdmissionPolicy
	bindings   []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	params     []*unstructured.Unstructured
	namespaces NamespaceMap
	req        *Request
	want       want
}

func runEvalCases(t *testing.T, cases []evalCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Compile(Objects{Policies: tc.policies, Bindings: tc.bindings, Params: tc.params}, CompileOptions{})
			ns := tc.namespaces
			if ns == nil {
				ns = NamespaceMap{"default": namespaceObj("default", nil)}
			}
			got := s.Evaluate(context.Background(), Validating, tc.req, WithNamespaces(ns))
			checkResult(t, got, tc.want)
			// The traced path evaluates every policy without the index and
			// must give the same answer.
			traced := s.Evaluate(context.Background(), Validating, tc.req, WithNamespaces(ns), WithTrace())
			traced.Trace = nil
			if !reflect.DeepEqual(stripTrace(got), traced) {
				t.Errorf("traced result differs:\n got %+v\nwant %+v", traced, got)
			}
		})
	}
}

func stripTrace(r *Result) *Result {
	c := *r
	c.Trace = nil
	return &c
}

func checkResult(t *testing.T, got *Result, w want) {
	t.Helper()
	if got.Allowed != w.allowed {
		t.Errorf("allowed = %v, want %v (status %+v)", got.Allowed, w.allowed, got.Status)
	}
	if w.allowed {
		if got.Status != nil {
			t.Errorf("status = %+v, want nil", got.Status)
		}
	} else if got.Status == nil {
		t.Errorf("status is nil")
	} else {
		if got.Status.Message != w.message {
			t.Errorf("message:\n got %q\nwant %q", got.Status.Message, w.message)
		}
		wantReason, wantCode := w.reason, w.code
		if wantReason == "" {
			wantReason = metav1.StatusReasonInvalid
		}
		if wantCode == 0 {
			wantCode = 422
		}
		if got.Status.Reason != wantReason || got.Status.Code != wantCode {
			t.Errorf("reason/code = %s/%d, want %s/%d", got.Status.Reason, got.Status.Code, wantReason, wantCode)
		}
		if got.Status.Status != metav1.StatusFailure {
			t.Errorf("status = %q, want Failure", got.Status.Status)
		}
		if got.Status.Details == nil || len(got.Status.Details.Causes) != 1 ||
			!strings.HasSuffix(got.Status.Message, got.Status.Details.Causes[0].Message) {
			t.Errorf("details = %+v, want one cause that ends the message", got.Status.Details)
		}
	}
	if !reflect.DeepEqual(got.Warnings, w.warnings) {
		t.Errorf("warnings:\n got %q\nwant %q", got.Warnings, w.warnings)
	}
	if !reflect.DeepEqual(got.AuditAnnotations, w.annotations) {
		t.Errorf("annotations:\n got %q\nwant %q", got.AuditAnnotations, w.annotations)
	}
	if got.UnknownNamespace != w.unknownNS {
		t.Errorf("unknownNamespace = %q, want %q", got.UnknownNamespace, w.unknownNS)
	}
	var outcomes []Outcome
	for _, b := range got.Bindings {
		outcomes = append(outcomes, b.Outcome)
	}
	if !reflect.DeepEqual(outcomes, w.outcomes) {
		t.Errorf("outcomes = %v, want %v", outcomes, w.outcomes)
	}
}

// deny builds the expected status message of a pod denial.
func denyMsg(policy, binding, msg string) string {
	return fmt.Sprintf("pods \"web\" is forbidden: ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", policy, binding, msg)
}

func warnMsg(policy, binding, msg string) string {
	return fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", policy, binding, msg)
}

func pols(p ...*admissionregistrationv1.ValidatingAdmissionPolicy) []*admissionregistrationv1.ValidatingAdmissionPolicy {
	return p
}

func binds(b ...*admissionregistrationv1.ValidatingAdmissionPolicyBinding) []*admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return b
}

func outs(o ...Outcome) []Outcome { return o }
