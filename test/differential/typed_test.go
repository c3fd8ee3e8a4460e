package differential

import (
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// typeConfused are expressions whose answer depends on how the object is
// handed to CEL: typed for a built-in kind (an error or another value), as
// JSON for a custom resource.
var typeConfused = []string{
	"object.metadata.labels == 'x'",
	"object.metadata.labels != 'x'",
	"1 in object.metadata.labels",
	"object.metadata == 1",
	"[object.metadata] == [1]",
	"[object.metadata.labels] == [{'app': 'web'}]",
	"object.metadata.labels == {'app': 'web'}",
	"object.spec.containers[0u].name == 'c0'",
	"object.spec.containers[0] == 'c0'",
	"object.data == 'x'",
	"1 in object.data",
	"oldObject == null || oldObject.metadata.labels == 'x'",
	"oldObject == null || object.metadata == oldObject.metadata",
	"params == null || params.data == 'x'",
	"params == null || 1 in params.data",
	"size(object.metadata) > 1 && has(object.metadata.labels)",
}

var widgetGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
var widgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}

// typedRequests are a Pod, a ConfigMap and a custom resource, created and
// updated.
func typedRequests() []*request {
	labels := map[string]any{"app": "web"}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "default", "labels": labels},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c0", "image": "nginx:1.25",
			"resources": map[string]any{"limits": map[string]any{"cpu": "500m"}}}}}}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "web", "namespace": "default", "labels": labels},
		"data": map[string]any{"k": "v"}}
	widget := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "web", "namespace": "default", "labels": labels},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c0"}}}, "data": map[string]any{"k": "v"}}
	var out []*request
	for _, r := range []struct {
		gvr schema.GroupVersionResource
		gvk schema.GroupVersionKind
		obj map[string]any
	}{{podGVR, podGVK, pod}, {cmGVR, configMapGVK, cm}, {widgetGVR, widgetGVK, widget}} {
		for _, op := range []admissionregistrationv1.OperationType{"CREATE", "UPDATE"} {
			er := &evaluator.Request{Kind: r.gvk, Resource: r.gvr, RequestKind: r.gvk, RequestResource: r.gvr,
				Name: "web", Namespace: "default", Operation: op, Object: sentObject(r.gvk, r.obj)}
			var opts runtime.Object = &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{Kind: "CreateOptions", APIVersion: "meta.k8s.io/v1"}}
			if op == "UPDATE" {
				old := runtime.DeepCopyJSON(r.obj)
				old["metadata"].(map[string]any)["labels"] = map[string]any{"app": "old"}
				er.OldObject = sentObject(r.gvk, old)
				opts = &metav1.UpdateOptions{TypeMeta: metav1.TypeMeta{Kind: "UpdateOptions", APIVersion: "meta.k8s.io/v1"}}
			}
			out = append(out, withUser(er, opts))
		}
	}
	return out
}

func withUser(er *evaluator.Request, opts runtime.Object) *request {
	if opts != nil {
		er.Options = runtime.RawExtension{Raw: mustJSON(opts)}
	}
	er.UserInfo = authenticationv1.UserInfo{Username: "alice", UID: "uid-alice", Groups: []string{"system:authenticated"}}
	return &request{evalReq: er, options: opts, userInfo: &user.DefaultInfo{Name: "alice", UID: "uid-alice", Groups: []string{"system:authenticated"}},
		namespace: er.Namespace}
}

// typedPolicy puts expr in one place of a policy that matches typedRequests.
func typedPolicy(name, expr, place string, f admissionregistrationv1.FailurePolicyType) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &f,
			ParamKind:     &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
				nrule([]string{"CREATE", "UPDATE"}, []string{"", "example.com"}, []string{"v1"}, []string{"pods", "configmaps", "widgets"})}},
		},
	}
	switch place {
	case "validation":
		p.Spec.Validations = []admissionregistrationv1.Validation{{Expression: expr}}
	case "messageExpression":
		p.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "false", Message: "static", MessageExpression: "(" + expr + ") ? 'yes' : 'no'"}}
	case "auditAnnotation":
		p.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "true"}}
		p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "k", ValueExpression: "(" + expr + ") ? 'yes' : 'no'"}}
	case "matchCondition":
		p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "m", Expression: expr}}
		p.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "false", Message: "selected"}}
	case "variable":
		p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "v", Expression: expr}}
		p.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "variables.v"}}
	}
	return p
}

// TestTypedObjects holds type-confused expressions on built-in kinds (typed
// in the plugin) and on a custom resource (JSON) to the plugin's answers,
// in every place an expression can be, under both failure policies.
func TestTypedObjects(t *testing.T) {
	reqs := typedRequests()
	var st diffStats
	for i, expr := range typeConfused {
		for _, place := range []string{"validation", "messageExpression", "auditAnnotation", "matchCondition", "variable"} {
			for _, f := range []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore} {
				name := fmt.Sprintf("typed%d-%s-%s", i, place, f)
				w := &world{params: worldParams()}
				w.namespaces, w.inventory = worldNamespaces()
				w.policies = []*admissionregistrationv1.ValidatingAdmissionPolicy{typedPolicy(name, expr, place, f)}
				w.bindings = []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
						ParamRef:          &admissionregistrationv1.ParamRef{Name: "limits", ParameterNotFoundAction: ptr(admissionregistrationv1.AllowAction)},
						ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Audit}},
				}}
				runWorld(t, name+" "+expr, w, reqs, &st)
			}
		}
	}
	t.Logf("%+v", st)
	// Each kind of answer must occur, or the cases test less than they say.
	for what, n := range map[string]int{"denied": st.denied, "allowed": st.allowed, "annotated": st.annotated, "errors": st.errors} {
		if n < 20 {
			t.Errorf("only %d %s cases", n, what)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestObjectSelectorOnConnect holds objectSelectors on the CONNECT options
// kinds, which have no ObjectMeta in the apiserver, to the plugin's answers.
func TestObjectSelectorOnConnect(t *testing.T) {
	connects := []struct {
		resource, sub, kind, namespace string
		object                         map[string]any
	}{
		{"pods", "exec", "PodExecOptions", "default", map[string]any{"command": []any{"sh"}, "stdin": true}},
		{"pods", "attach", "PodAttachOptions", "default", map[string]any{"stdout": true}},
		{"pods", "portforward", "PodPortForwardOptions", "default", map[string]any{"ports": []any{int64(8080)}}},
		{"pods", "proxy", "PodProxyOptions", "default", map[string]any{"path": "/"}},
		{"nodes", "proxy", "NodeProxyOptions", "", map[string]any{"path": "/"}},
		{"services", "proxy", "ServiceProxyOptions", "default", map[string]any{"path": "/"}},
	}
	var reqs []*request
	for _, c := range connects {
		obj := map[string]any{"apiVersion": "v1", "kind": c.kind}
		for k, v := range c.object {
			obj[k] = v
		}
		gvk := schema.GroupVersionKind{Version: "v1", Kind: c.kind}
		gvr := schema.GroupVersionResource{Version: "v1", Resource: c.resource}
		er := &evaluator.Request{Kind: gvk, Resource: gvr, SubResource: c.sub, RequestKind: gvk, RequestResource: gvr, RequestSubResource: c.sub,
			Name: "web", Namespace: c.namespace, Operation: "CONNECT", Object: sentObject(gvk, obj)}
		reqs = append(reqs, withUser(er, nil))
	}
	selectors := map[string]*metav1.LabelSelector{
		"empty":        {},
		"In":           {MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}}}},
		"NotIn":        {MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"web"}}}},
		"DoesNotExist": {MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpDoesNotExist}}},
		"Exists":       {MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}},
	}
	var st diffStats
	for name, sel := range selectors {
		for _, onBinding := range []bool{false, true} {
			w := &world{params: worldParams()}
			w.namespaces, w.inventory = worldNamespaces()
			mr := &admissionregistrationv1.MatchResources{ObjectSelector: &metav1.LabelSelector{}, ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
				nrule([]string{"CONNECT"}, []string{""}, []string{"v1"}, []string{"pods/*", "nodes/proxy", "services/proxy"})}}
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "connect"},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{MatchConstraints: mr,
					Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "no " + name}}}}
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "connect"},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "connect",
					ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
			if onBinding {
				b.Spec.MatchResources = &admissionregistrationv1.MatchResources{ObjectSelector: sel}
			} else {
				mr.ObjectSelector = sel
			}
			w.policies = []*admissionregistrationv1.ValidatingAdmissionPolicy{p}
			w.bindings = []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
			runWorld(t, fmt.Sprintf("connect-%s-binding=%v", name, onBinding), w, reqs, &st)
		}
	}
	t.Logf("%+v", st)
	// Only the empty selectors match: 2 worlds of 6 requests.
	if st.denied != 12 || st.cases != 60 {
		t.Errorf("%d of %d cases denied, want 12 of 60", st.denied, st.cases)
	}
}
