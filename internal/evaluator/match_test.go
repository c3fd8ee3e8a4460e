package evaluator

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func scope(s admissionregistrationv1.ScopeType) func(*admissionregistrationv1.NamedRuleWithOperations) {
	return func(r *admissionregistrationv1.NamedRuleWithOperations) { r.Scope = &s }
}

func ruleWith(r admissionregistrationv1.NamedRuleWithOperations, fs ...func(*admissionregistrationv1.NamedRuleWithOperations)) admissionregistrationv1.NamedRuleWithOperations {
	for _, f := range fs {
		f(&r)
	}
	return r
}

func names(n ...string) func(*admissionregistrationv1.NamedRuleWithOperations) {
	return func(r *admissionregistrationv1.NamedRuleWithOperations) { r.ResourceNames = n }
}

var (
	deployGVR    = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	deployGVK    = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	nsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	nsGVK        = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	crGVR        = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	crGVK        = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}
	execGVK      = schema.GroupVersionKind{Version: "v1", Kind: "PodExecOptions"}
	vapGVR       = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
	podDenied    = want{message: denyMsg("p", "b", "failed expression: false"), outcomes: outs(violation)}
	podNotDenied = want{allowed: true}
)

func matchCase(name string, r admissionregistrationv1.NamedRuleWithOperations, req *Request, matches bool) evalCase {
	w := podNotDenied
	if matches {
		w = want{message: denyMsgFor(req, "p", "b", "failed expression: false"), outcomes: outs(violation)}
	}
	return evalCase{name: name, policies: pols(policy("p", rules(r), validation("false"))), bindings: binds(binding("b", "p")), req: req, want: w}
}

func denyMsgFor(req *Request, policy, binding, msg string) string {
	return DenialStatus(req, Denial{Policy: policy, Binding: binding, Message: msg}).Message
}

func nsRequest(op string) *Request {
	r := &Request{Kind: nsGVK, Resource: nsGVR, Name: "team-a", Namespace: "team-a", Operation: admissionregistrationv1.OperationType(op)}
	o := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team-a", "labels": map[string]any{"env": "prod"}}}
	if op == "DELETE" {
		r.OldObject = o
	} else {
		r.Object = o
	}
	return r
}

func clusterRoleRequest() *Request {
	return &Request{Kind: crGVK, Resource: crGVR, Name: "admin", Operation: "CREATE",
		Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": "admin"}}}
}

func TestMatchRules(t *testing.T) {
	pods := []string{"pods"}
	core, v1 := []string{""}, []string{"v1"}
	status := podRequest("UPDATE", withResource(podGVR, podGVK, "status"))
	exec := podRequest("CONNECT", withResource(podGVR, execGVK, "exec"), withObject(map[string]any{"apiVersion": "v1", "kind": "PodExecOptions"}))
	deploy := podRequest("CREATE", withResource(deployGVR, deployGVK, ""), withObject(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"}}))
	runEvalCases(t, []evalCase{
		matchCase("exact operation matches", rule([]string{"CREATE"}, core, v1, pods), podRequest("CREATE"), true),
		matchCase("other operation does not match", rule([]string{"UPDATE"}, core, v1, pods), podRequest("CREATE"), false),
		matchCase("operation star matches", rule([]string{"*"}, core, v1, pods), podRequest("DELETE"), true),
		matchCase("CONNECT matches exec", rule([]string{"CONNECT"}, core, v1, []string{"pods/exec"}), exec, true),
		matchCase("CONNECT rule ignores CREATE", rule([]string{"CONNECT"}, core, v1, []string{"pods/exec"}), podRequest("CREATE"), false),
		matchCase("group mismatch", rule([]string{"*"}, []string{"apps"}, v1, pods), podRequest("CREATE"), false),
		matchCase("group star", rule([]string{"*"}, []string{"*"}, v1, pods), podRequest("CREATE"), true),
		matchCase("version mismatch", rule([]string{"*"}, core, []string{"v2"}, pods), podRequest("CREATE"), false),
		matchCase("version star", rule([]string{"*"}, core, []string{"*"}, pods), podRequest("CREATE"), true),
		matchCase("resource star matches pods", rule([]string{"*"}, core, v1, []string{"*"}), podRequest("CREATE"), true),
		matchCase("resource star skips subresources", rule([]string{"*"}, core, v1, []string{"*"}), status, false),
		matchCase("star slash star matches subresource", rule([]string{"*"}, core, v1, []string{"*/*"}), status, true),
		matchCase("star slash star matches resource", rule([]string{"*"}, core, v1, []string{"*/*"}), podRequest("CREATE"), true),
		matchCase("pods slash star matches status", rule([]string{"*"}, core, v1, []string{"pods/*"}), status, true),
		matchCase("pods slash star also matches pods itself", rule([]string{"*"}, core, v1, []string{"pods/*"}), podRequest("CREATE"), true),
		matchCase("star slash status matches", rule([]string{"*"}, core, v1, []string{"*/status"}), status, true),
		matchCase("star slash status skips exec", rule([]string{"*"}, core, v1, []string{"*/status"}), exec, false),
		matchCase("pods rule skips status", rule([]string{"*"}, core, v1, pods), status, false),
		matchCase("pods/status exact", rule([]string{"UPDATE"}, core, v1, []string{"pods/status"}), status, true),
		matchCase("deployments apps", rule([]string{"CREATE"}, []string{"apps"}, v1, []string{"deployments"}), deploy, true),
		matchCase("namespaced scope matches pod", ruleWith(rule([]string{"*"}, core, v1, pods), scope(admissionregistrationv1.NamespacedScope)), podRequest("CREATE"), true),
		matchCase("cluster scope skips pod", ruleWith(rule([]string{"*"}, core, v1, pods), scope(admissionregistrationv1.ClusterScope)), podRequest("CREATE"), false),
		matchCase("cluster scope matches namespace", ruleWith(rule([]string{"*"}, core, v1, []string{"namespaces"}), scope(admissionregistrationv1.ClusterScope)), nsRequest("CREATE"), true),
		matchCase("namespaced scope skips namespace", ruleWith(rule([]string{"*"}, core, v1, []string{"namespaces"}), scope(admissionregistrationv1.NamespacedScope)), nsRequest("CREATE"), false),
		matchCase("cluster scope matches clusterrole", ruleWith(rule([]string{"*"}, []string{"*"}, []string{"*"}, []string{"*"}), scope(admissionregistrationv1.ClusterScope)), clusterRoleRequest(), true),
		matchCase("namespaced scope skips clusterrole", ruleWith(rule([]string{"*"}, []string{"*"}, []string{"*"}, []string{"*"}), scope(admissionregistrationv1.NamespacedScope)), clusterRoleRequest(), false),
		matchCase("all scopes matches clusterrole", ruleWith(rule([]string{"*"}, []string{"*"}, []string{"*"}, []string{"*"}), scope(admissionregistrationv1.AllScopes)), clusterRoleRequest(), true),
		matchCase("unknown scope never matches", ruleWith(rule([]string{"*"}, core, v1, pods), scope("Galaxy")), podRequest("CREATE"), false),
		matchCase("resourceNames matches name", ruleWith(rule([]string{"*"}, core, v1, pods), names("web")), podRequest("CREATE"), true),
		matchCase("resourceNames skips other name", ruleWith(rule([]string{"*"}, core, v1, pods), names("db")), podRequest("CREATE"), false),
		matchCase("resourceNames skips empty name", ruleWith(rule([]string{"*"}, core, v1, pods), names("web")), podRequest("CREATE", withName("")), false),
		{
			name:     "admission configuration resources are never evaluated",
			policies: pols(policy("p", rules(rule([]string{"*"}, []string{"*"}, []string{"*"}, []string{"*"})), validation("false"))),
			bindings: binds(binding("b", "p")),
			req: &Request{Kind: schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"}, Resource: vapGVR, Name: "x", Operation: "CREATE",
				Object: map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": map[string]any{"name": "x"}}},
			want: podNotDenied,
		},
		{
			name:     "exclude rule wins over include",
			policies: pols(policy("p", validation("false"), excludeRules(rule([]string{"CREATE"}, []string{""}, []string{"v1"}, []string{"pods"})))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     podNotDenied,
		},
		{
			name:     "exclude rule for other operation leaves match",
			policies: pols(policy("p", validation("false"), excludeRules(rule([]string{"DELETE"}, []string{""}, []string{"v1"}, []string{"pods"})))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     podDenied,
		},
		{
			name:     "exclude by resource name",
			policies: pols(policy("p", validation("false"), excludeRules(ruleWith(rule([]string{"*"}, []string{""}, []string{"v1"}, []string{"pods"}), names("web"))))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     podNotDenied,
		},
		{
			name:     "no resource rules matches everything",
			policies: pols(policy("p", rules(), validation("false"))),
			bindings: binds(binding("b", "p")),
			req:      clusterRoleRequest(),
			want:     want{message: denyMsgFor(clusterRoleRequest(), "p", "b", "failed expression: false"), outcomes: outs(violation)},
		},
		{
			name:     "missing matchConstraints is a policy configuration error",
			policies: pols(policy("p", noConstraints(), validation("true"))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{message: "pods \"web\" is forbidden: ValidatingAdmissionPolicy 'p' denied request: failed to configure policy: policy contained no match constraints, a required field", outcomes: outs(errored)},
		},
		{
			name:     "missing matchConstraints with Ignore allows",
			policies: pols(policy("p", noConstraints(), failurePolicy(admissionregistrationv1.Ignore))),
			bindings: binds(binding("b", "p")),
			req:      podRequest("CREATE"),
			want:     want{allowed: true, outcomes: outs(errored)},
		},
		{
			name:     "policy without binding is inert",
			policies: pols(policy("p", validation("false"))),
			req:      podRequest("CREATE"),
			want:     podNotDenied,
		},
		{
			name:     "binding of a missing policy is ignored",
			policies: pols(policy("p", validation("true"))),
			bindings: binds(binding("b", "p"), binding("orphan", "nope")),
			req:      podRequest("CREATE"),
			want:     want{allowed: true, outcomes: outs(pass)},
		},
		{
			name: "Exact matchPolicy ignores the converted resource",
			policies: pols(policy("p", validation("false"), rules(rule([]string{"*"}, []string{"apps"}, []string{"v1beta1"}, []string{"deployments"})), constraints(func(m *admissionregistrationv1.MatchResources) {
				e := admissionregistrationv1.Exact
				m.MatchPolicy = &e
			}))),
			bindings: binds(binding("b", "p")),
			req:      convertedDeployment(),
			want:     podNotDenied,
		},
		{
			name:     "Equivalent matchPolicy matches the converted resource",
			policies: pols(policy("p", validation("request.kind.version == 'v1beta1' && request.requestKind.version == 'v1'"), rules(rule([]string{"*"}, []string{"apps"}, []string{"v1beta1"}, []string{"deployments"})))),
			bindings: binds(binding("b", "p")),
			req:      convertedDeployment(),
			want:     want{allowed: true, outcomes: outs(pass)},
		},
		{
			name:     "rule on the original version with a converted object cannot convert",
			policies: pols(policy("p", validation("true"), rules(rule([]string{"*"}, []string{"apps"}, []string{"v1"}, []string{"deployments"})))),
			bindings: binds(binding("b", "p")),
			req:      convertedDeployment(),
			want: want{message: "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed to configure binding: failed to convert object version: the webhook received the object as apps/v1beta1, Kind=Deployment, not as apps/v1, Kind=Deployment",
				outcomes: outs(errored)},
		},
	})
}

func convertedDeployment() *Request {
	return &Request{
		Kind: schema.GroupVersionKind{Group: "apps", Version: "v1beta1", Kind: "Deployment"}, Resource: schema.GroupVersionResource{Group: "apps", Version: "v1beta1", Resource: "deployments"},
		RequestKind: deployGVK, RequestResource: deployGVR, Name: "web", Namespace: "default", Operation: "CREATE",
		Object: map[string]any{"apiVersion": "apps/v1beta1", "kind": "Deployment", "metadata": map[string]any{"name": "web"}},
	}
}

func nsSelector(sel *metav1.LabelSelector) policyOpt {
	return constraints(func(m *admissionregistrationv1.MatchResources) { m.NamespaceSelector = sel })
}

func objSelector(sel *metav1.LabelSelector) policyOpt {
	return constraints(func(m *admissionregistrationv1.MatchResources) { m.ObjectSelector = sel })
}

func TestMatchSelectors(t *testing.T) {
	prod := &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	byName := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"default"}}}}
	badSel := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Sometimes"}}}
	inv := NamespaceMap{"default": namespaceObj("default", map[string]string{"env": "prod"}), "dev": namespaceObj("dev", map[string]string{"env": "dev"})}
	nsDeny := func(ns string) want {
		return want{message: denyMsg("p", "b", "failed expression: false"), outcomes: outs(violation)}
	}
	runEvalCases(t, []evalCase{
		{name: "namespace selector matches labels", policies: pols(policy("p", validation("false"), nsSelector(prod))), bindings: binds(binding("b", "p")), namespaces: inv, req: podRequest("CREATE"), want: nsDeny("default")},
		{name: "namespace selector skips other namespace", policies: pols(policy("p", validation("false"), nsSelector(prod))), bindings: binds(binding("b", "p")), namespaces: inv, req: podRequest("CREATE", withNamespace("dev")), want: podNotDenied},
		{name: "empty namespace selector needs no lookup", policies: pols(policy("p", validation("false"), nsSelector(&metav1.LabelSelector{}))), bindings: binds(binding("b", "p")), namespaces: NamespaceMap{}, req: podRequest("CREATE"), want: nsDeny("default")},
		{name: "namespace selector ignores cluster-scoped objects", policies: pols(policy("p", validation("false"), rules(rule([]string{"*"}, []string{"*"}, []string{"*"}, []string{"*"})), nsSelector(prod))), bindings: binds(binding("b", "p")), namespaces: inv, req: clusterRoleRequest(),
			want: want{message: denyMsgFor(clusterRoleRequest(), "p", "b", "failed expression: false"), outcomes: outs(violation)}},
		{name: "namespace selector on a Namespace create reads the object", policies: pols(policy("p", validation("false"), rules(rule([]string{"*"}, []string{""}, []string{"v1"}, []string{"namespaces"})), nsSelector(prod))), bindings: binds(binding("b", "p")), namespaces: NamespaceMap{}, req: nsRequest("CREATE"),
			want: want{message: denyMsgFor(nsRequest("CREATE"), "p", "b", "failed expression: false"), outcomes: outs(violation)}},
		{name: "namespace selector on a Namespace delete looks it up", policies: pols(policy("p", validation("false"), rules(rule([]string{"*"}, []string{""}, []string{"v1"}, []string{"namespaces"})), nsSelector(prod))), bindings: binds(binding("b", "p")),
			namespaces: NamespaceMap{"team-a": namespaceObj("team-a", map[string]string{"env": "dev"})}, req: nsRequest("DELETE"), want: podNotDenied},
		{name: "unknown namespace with name-only selector matches", policies: pols(policy("p", validation("false"), nsSelector(byName))), bindings: binds(binding("b", "p")), namespaces: NamespaceMap{}, req: podRequest("CREATE"), want: nsDeny("default")},
		{name: "unknown namespace with name-only selector skips", policies: pols(policy("p", validation("false"), nsSelector(byName))), bindings: binds(binding("b", "p")), namespaces: NamespaceMap{}, req: podRequest("CREATE", withNamespace("other")), want: podNotDenied},
		{name: "unknown namespace with label selector fails closed", policies: pols(policy("p", validation("true"), nsSelector(prod))), bindings: binds(binding("b", "p")), namespaces: NamespaceMap{}, req: podRequest("CREATE"),
			want: want{message: "pods \"web\" is forbidden: ValidatingAdmissionPolicy 'p' denied request: failed to configure policy: namespace \"default\" is unknown: the namespace inventory lacks it, so its labels and object cannot be evaluated", unknownNS: "default", outcomes: outs(errored)}},
		{name: "unknown namespace with label selector and Ignore allows", policies: pols(policy("p", validation("false"), nsSelector(prod), failurePolicy(admissionregistrationv1.Ignore))), bindings: binds(binding("b", "p")), namespaces: NamespaceMap{}, req: podRequest("CREATE"),
			want: want{allowed: true, unknownNS: "default", outcomes: outs(errored)}},
		{name: "unknown namespace on binding selector is a binding error", policies: pols(policy("p", validation("true"))), bindings: binds(binding("b", "p", matchResources(func(m *admissionregistrationv1.MatchResources) { m.NamespaceSelector = prod }))), namespaces: NamespaceMap{}, req: podRequest("CREATE"),
			want: want{message: denyMsg("p", "b", "failed to configure binding: namespace \"default\" is unknown: the namespace inventory lacks it, so its labels and object cannot be evaluated"), unknownNS: "default", outcomes: outs(errored)}},
		{name: "unknown namespace ignored when rules do not match", policies: pols(policy("p", validation("true"), nsSelector(prod), rules(rule([]string{"DELETE"}, []string{""}, []string{"v1"}, []string{"pods"})))), bindings: binds(binding("b", "p")), namespaces: NamespaceMap{}, req: podRequest("CREATE"), want: podNotDenied},
		{name: "metadata.name label is always known", policies: pols(policy("p", validation("false"), nsSelector(byName))), bindings: binds(binding("b", "p")),
			namespaces: NamespaceMap{"default": &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}}, req: podRequest("CREATE"), want: nsDeny("default")},
		{name: "invalid namespace selector is an internal error", policies: pols(policy("p", validation("true"), nsSelector(badSel))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"),
			want: want{message: "pods \"web\" is forbidden: ValidatingAdmissionPolicy 'p' denied request: failed to configure policy: Internal error occurred: \"Sometimes\" is not a valid label selector operator", outcomes: outs(errored)}},
		{name: "object selector matches object labels", policies: pols(policy("p", validation("false"), objSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"), want: nsDeny("default")},
		{name: "object selector skips other labels", policies: pols(policy("p", validation("false"), objSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"), want: podNotDenied},
		{name: "object selector matches oldObject", policies: pols(policy("p", validation("false"), objSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "old"}}))), bindings: binds(binding("b", "p")),
			req: podRequest("UPDATE", withOldObject(pod("web", map[string]any{"app": "old"}, "nginx:1"))), want: nsDeny("default")},
		{name: "object selector on delete reads oldObject", policies: pols(policy("p", validation("false"), rules(rule([]string{"*"}, []string{""}, []string{"v1"}, []string{"pods"})), objSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}))), bindings: binds(binding("b", "p")), req: podRequest("DELETE"), want: nsDeny("default")},
		{name: "object selector Exists", policies: pols(policy("p", validation("false"), objSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}}))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"), want: nsDeny("default")},
		{name: "object selector DoesNotExist", policies: pols(policy("p", validation("false"), objSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpDoesNotExist}}}))), bindings: binds(binding("b", "p")), req: podRequest("CREATE"), want: podNotDenied},
		{name: "object without labels does not match selector", policies: pols(policy("p", validation("false"), objSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}))), bindings: binds(binding("b", "p")), req: podRequest("CREATE", withObject(pod("web", nil, "nginx:1"))), want: podNotDenied},
		{name: "binding matchResources narrows", policies: pols(policy("p", validation("false"))), bindings: binds(binding("b", "p", matchResources(func(m *admissionregistrationv1.MatchResources) {
			m.ResourceRules = []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"UPDATE"}, []string{""}, []string{"v1"}, []string{"pods"})}
		}))), req: podRequest("CREATE"), want: podNotDenied},
		{name: "binding matchResources without rules keeps match", policies: pols(policy("p", validation("false"))), bindings: binds(binding("b", "p", matchResources(func(m *admissionregistrationv1.MatchResources) {}))), req: podRequest("CREATE"), want: nsDeny("default")},
		{name: "binding object selector", policies: pols(policy("p", validation("false"))), bindings: binds(binding("b", "p", matchResources(func(m *admissionregistrationv1.MatchResources) {
			m.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
		}))), req: podRequest("CREATE"), want: podNotDenied},
		{name: "binding exclude rules", policies: pols(policy("p", validation("false"))), bindings: binds(binding("b", "p", matchResources(func(m *admissionregistrationv1.MatchResources) {
			m.ExcludeResourceRules = []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"*"}, []string{"*"}, []string{"*"}, []string{"*"})}
		}))), req: podRequest("CREATE"), want: podNotDenied},
		{name: "one of two bindings matches", policies: pols(policy("p", validation("false"))), bindings: binds(
			binding("b", "p"),
			binding("c", "p", matchResources(func(m *admissionregistrationv1.MatchResources) {
				m.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
			}))), req: podRequest("CREATE"), want: nsDeny("default")},
	})
}
