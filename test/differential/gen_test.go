package differential

import (
	"fmt"
	"math/rand/v2"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// gen produces worlds and requests from a seed. Every feature of the
// policy API appears: rules with wildcards, subresources, scopes and names;
// exclude rules; namespace and object selectors; matchPolicy;
// matchConditions; variables; validations with message, messageExpression
// and reason; audit annotations; failurePolicy; validationActions; params
// by name and selector, namespaced and cluster-scoped, typed and custom;
// parameterNotFoundAction; namespaceObject; compile and runtime errors;
// cost limits.
type gen struct{ r *rand.Rand }

func (g gen) pick(n int) int        { return g.r.IntN(n) }
func (g gen) chance(p float64) bool { return g.r.Float64() < p }

func pickOne[T any](g gen, xs []T) T { return xs[g.pick(len(xs))] }

// The namespaces of every world. "legacy" exists in the cluster but not in
// the gateway's inventory.
func worldNamespaces() ([]*corev1.Namespace, evaluator.NamespaceMap) {
	mk := func(name string, labels map[string]string) *corev1.Namespace {
		l := map[string]string{"kubernetes.io/metadata.name": name}
		for k, v := range labels {
			l[k] = v
		}
		return &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l, UID: types.UID("uid-" + name), Annotations: map[string]string{"owner": "team-" + name}},
			Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}},
			Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
		}
	}
	all := []*corev1.Namespace{
		mk("default", map[string]string{"env": "prod", "team": "a"}),
		mk("dev", map[string]string{"env": "dev", "team": "b"}),
		mk("kube-system", map[string]string{"tier": "system"}),
		mk("legacy", map[string]string{"env": "prod"}),
	}
	inv := evaluator.NamespaceMap{}
	for _, ns := range all[:3] {
		inv[ns.Name] = ns
	}
	return all, inv
}

func worldParams() []*unstructured.Unstructured {
	cm := func(ns, name string, labels map[string]string, data map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": ns}, "data": data}}
		if labels != nil {
			u.SetLabels(labels)
		}
		return u
	}
	limits := func(ns, name string, labels map[string]string, spec map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Limits",
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}
		if labels != nil {
			u.SetLabels(labels)
		}
		return u
	}
	cluster := func(name string, labels map[string]string, spec map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "ClusterLimits",
			"metadata": map[string]any{"name": name}, "spec": spec}}
		if labels != nil {
			u.SetLabels(labels)
		}
		return u
	}
	return []*unstructured.Unstructured{
		cm("default", "limits", map[string]string{"set": "a"}, map[string]any{"maxContainers": "2", "registry": "registry.example.com"}),
		cm("default", "strict", map[string]string{"set": "a"}, map[string]any{"maxContainers": "1", "registry": "internal.example.com"}),
		cm("dev", "limits", map[string]string{"set": "b"}, map[string]any{"maxContainers": "3", "registry": "docker.io"}),
		cm("kube-system", "limits", nil, map[string]any{"maxContainers": "9"}),
		limits("default", "limits", map[string]string{"set": "a"}, map[string]any{"maxNameLength": int64(4), "blockedNames": []any{"db"}}),
		limits("dev", "limits", map[string]string{"set": "b"}, map[string]any{"maxNameLength": int64(10), "blockedNames": []any{}}),
		limits("dev", "other", map[string]string{"set": "b"}, map[string]any{"maxNameLength": int64(2), "blockedNames": []any{"web"}}),
		cluster("global", map[string]string{"set": "a"}, map[string]any{"maxNameLength": int64(6), "blockedNames": []any{"evil"}}),
		cluster("relaxed", map[string]string{"set": "b"}, map[string]any{"maxNameLength": int64(64), "blockedNames": []any{}}),
	}
}

type paramChoice int

const (
	noParams paramChoice = iota
	configMapParams
	limitsParams
	clusterLimitsParams
)

var rulePool = []func(g gen) admissionregistrationv1.NamedRuleWithOperations{
	func(gen) admissionregistrationv1.NamedRuleWithOperations {
		return nrule([]string{"CREATE", "UPDATE"}, []string{""}, []string{"v1"}, []string{"pods"})
	},
	func(gen) admissionregistrationv1.NamedRuleWithOperations {
		return nrule([]string{"*"}, []string{"*"}, []string{"*"}, []string{"*"})
	},
	func(gen) admissionregistrationv1.NamedRuleWithOperations {
		return nrule([]string{"*"}, []string{"*"}, []string{"*"}, []string{"*/*"})
	},
	func(gen) admissionregistrationv1.NamedRuleWithOperations {
		return nrule([]string{"UPDATE", "CONNECT"}, []string{""}, []string{"v1"}, []string{"pods/*"})
	},
	func(gen) admissionregistrationv1.NamedRuleWithOperations {
		return nrule([]string{"UPDATE"}, []string{"*"}, []string{"*"}, []string{"*/status"})
	},
	func(gen) admissionregistrationv1.NamedRuleWithOperations {
		return nrule([]string{"CREATE", "UPDATE"}, []string{"apps"}, []string{"v1"}, []string{"deployments"})
	},
	func(gen) admissionregistrationv1.NamedRuleWithOperations {
		return nrule([]string{"CONNECT"}, []string{""}, []string{"v1"}, []string{"pods/exec"})
	},
	func(gen) admissionregistrationv1.NamedRuleWithOperations {
		return nrule([]string{"DELETE"}, []string{""}, []string{"*"}, []string{"pods", "configmaps"})
	},
	func(gen) admissionregistrationv1.NamedRuleWithOperations {
		return nrule([]string{"*"}, []string{""}, []string{"v1"}, []string{"configmaps"})
	},
	func(gen) admissionregistrationv1.NamedRuleWithOperations {
		return nrule([]string{"CREATE", "UPDATE", "DELETE"}, []string{""}, []string{"v1"}, []string{"namespaces"})
	},
	func(gen) admissionregistrationv1.NamedRuleWithOperations {
		return nrule([]string{"CREATE"}, []string{"rbac.authorization.k8s.io"}, []string{"v1"}, []string{"clusterroles"})
	},
}

func nrule(ops, groups, versions, resources []string) admissionregistrationv1.NamedRuleWithOperations {
	r := admissionregistrationv1.NamedRuleWithOperations{}
	for _, o := range ops {
		r.Operations = append(r.Operations, admissionregistrationv1.OperationType(o))
	}
	r.APIGroups, r.APIVersions, r.Resources = groups, versions, resources
	return r
}

func (g gen) rule() admissionregistrationv1.NamedRuleWithOperations {
	r := pickOne(g, rulePool)(g)
	switch g.pick(6) {
	case 0:
		s := admissionregistrationv1.NamespacedScope
		r.Scope = &s
	case 1:
		s := admissionregistrationv1.ClusterScope
		r.Scope = &s
	case 2:
		s := admissionregistrationv1.AllScopes
		r.Scope = &s
	}
	if g.chance(0.1) {
		r.ResourceNames = []string{pickOne(g, []string{"web", "db", "limits", "dev"})}
	}
	return r
}

func (g gen) selector(namespace bool) *metav1.LabelSelector {
	if namespace {
		switch g.pick(8) {
		case 0:
			return &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
		case 1:
			return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"dev"}}}}
		case 2:
			return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"default", "legacy", "newns"}}}}
		case 3:
			return &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "legacy"}}
		case 4:
			return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpDoesNotExist}}}
		case 5:
			return nil // left to API defaulting
		}
		return &metav1.LabelSelector{}
	}
	switch g.pick(6) {
	case 0:
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	case 1:
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}}
	case 2:
		return nil
	}
	return &metav1.LabelSelector{}
}

func (g gen) matchResources(constraints bool) *admissionregistrationv1.MatchResources {
	mr := &admissionregistrationv1.MatchResources{
		NamespaceSelector: g.selector(true),
		ObjectSelector:    g.selector(false),
	}
	n := 1 + g.pick(2)
	if !constraints {
		n = g.pick(2)
	}
	for range n {
		mr.ResourceRules = append(mr.ResourceRules, g.rule())
	}
	if g.chance(0.2) {
		mr.ExcludeResourceRules = append(mr.ExcludeResourceRules, g.rule())
	}
	switch g.pick(3) {
	case 0:
		m := admissionregistrationv1.Exact
		mr.MatchPolicy = &m
	case 1:
		m := admissionregistrationv1.Equivalent
		mr.MatchPolicy = &m
	}
	return mr
}

var variablePool = []admissionregistrationv1.Variable{
	{Name: "isWeb", Expression: "object != null && object.metadata.?labels.?app.orValue('') == 'web'"},
	{Name: "images", Expression: "object.spec.containers.map(c, c.image)"},
	{Name: "imageCount", Expression: "size(variables.images)"},
	{Name: "broken", Expression: "object.nothing.here"},
	{Name: "badSyntax", Expression: "1 +"},
	{Name: "nsName", Expression: "namespaceObject == null ? '' : namespaceObject.metadata.name"},
	{Name: "user", Expression: "request.userInfo.username"},
}

func (g gen) variables() []admissionregistrationv1.Variable {
	var out []admissionregistrationv1.Variable
	for _, v := range variablePool {
		if g.chance(0.35) {
			out = append(out, v)
		}
	}
	return out
}

var matchConditionPool = []admissionregistrationv1.MatchCondition{
	{Name: "not-delete", Expression: "request.operation != 'DELETE'"},
	{Name: "has-labels", Expression: "object != null && has(object.metadata.labels)"},
	{Name: "not-exempt", Expression: "!('exempt' in object.metadata.?labels.orValue({}))"},
	{Name: "errors", Expression: "object.spec.nothing == 1"},
	{Name: "not-alice", Expression: "request.userInfo.username != 'alice'"},
	{Name: "uses-variable", Expression: "variables.user != 'mallory'"},
}

func (g gen) matchConditions() []admissionregistrationv1.MatchCondition {
	var out []admissionregistrationv1.MatchCondition
	for _, m := range matchConditionPool {
		if g.chance(0.15) {
			out = append(out, m)
		}
	}
	return out
}

func validationPool(pc paramChoice) []string {
	pool := []string{
		"object.metadata.name.startsWith('web')",
		"has(object.metadata.labels) && 'app' in object.metadata.labels",
		"object.spec.containers.all(c, !c.image.endsWith(':latest') && c.image.contains(':'))",
		"object.spec.containers.all(c, c.?securityContext.?privileged.orValue(false) == false)",
		"!has(object.spec.hostNetwork) || object.spec.hostNetwork == false",
		"request.userInfo.username != 'mallory'",
		"request.operation != 'DELETE' || oldObject.metadata.name != 'protected'",
		"namespaceObject == null || namespaceObject.metadata.name != 'kube-system'",
		"namespaceObject == null || namespaceObject.metadata.labels['env'] != 'prod' || object.metadata.name != 'db'",
		"namespaceObject == null || namespaceObject.status.phase == 'Active' && namespaceObject.metadata.annotations['owner'].startsWith('team')",
		"object.spec.replicas <= 5",
		"size(object.metadata.name) < 5",
		"request.dryRun == false",
		"object.metadata.name.matches('^[a-z]+$')",
		"'x' == 1",
		"object.nope.nope == 'x'",
		"variables.isWeb || object.metadata.name != 'web'",
		"variables.imageCount <= 2",
		"variables.broken == 1",
		"variables.badSyntax == 2",
		"variables.nsName != 'dev'",
		"request.kind.kind != 'Deployment' || request.resource.group == 'apps'",
		"request.subResource == '' || request.operation == 'UPDATE' || request.operation == 'CONNECT'",
		"!has(request.options.dryRun)",
		"request.options == null || request.options.kind.endsWith('Options')",
		"quantity(object.spec.containers[0].?resources.?limits.?cpu.orValue('1')).isLessThan(quantity('2'))",
		"oldObject == null || object == null || object.metadata.?labels == oldObject.metadata.?labels",
		"type(object) == map",
		"object.metadata.?generateName.orValue('') == ''",
		"object.kind != 'Namespace' || object.metadata.?labels.?env.orValue('none') != 'forbidden'",
		// Type-confused: errors on the typed objects of built-in kinds.
		"object.metadata.labels != 'x'",
		"!(1 in object.metadata.labels)",
		"[object.metadata] != [1]",
		costlyPerCall,
	}
	switch pc {
	case configMapParams:
		pool = append(pool,
			"!has(params.data) || !('maxContainers' in params.data) || size(object.spec.containers) <= int(params.data.maxContainers)",
			"params.metadata.name != 'strict'",
			"object.spec.containers.all(c, !('registry' in params.data) || c.image.startsWith(params.data.registry))",
			"params.kind == 'ConfigMap' && params.apiVersion == 'v1'",
		)
	case limitsParams, clusterLimitsParams:
		pool = append(pool,
			"size(object.metadata.name) <= params.spec.maxNameLength",
			"!(object.metadata.name in params.spec.blockedNames)",
			"params.metadata.name != 'other'",
			"params.kind.endsWith('Limits')",
		)
	default:
		pool = append(pool, "params.spec.x == 1")
	}
	return pool
}

// costlyPerCall exceeds the 1e6 per-expression cost limit.
var costlyPerCall = func() string {
	var xs []string
	for i := range 101 {
		xs = append(xs, fmt.Sprint(i))
	}
	l := "[" + strings.Join(xs, ",") + "]"
	return l + ".all(a, " + l + ".all(b, " + l + ".all(c, a + b + c >= 0)))"
}()

// costlyShare costs about 4.4e5; about 23 of them exhaust the 1e7 budget.
var costlyShare = func() string {
	var xs []string
	for i := range 300 {
		xs = append(xs, fmt.Sprint(i))
	}
	l := "[" + strings.Join(xs, ",") + "]"
	return l + ".all(a, " + l + ".all(b, a + b >= 0))"
}()

var messageExpressionPool = []string{
	"",
	"'name ' + object.metadata.name",
	"object.nope",
	"'line\\nbreak'",
	"'  padded  '",
	"1",
	"string(size(object.metadata.name)) + ' chars'",
}

var reasonPool = []metav1.StatusReason{"", metav1.StatusReasonForbidden, metav1.StatusReasonInvalid,
	metav1.StatusReasonUnauthorized, metav1.StatusReasonRequestEntityTooLarge, metav1.StatusReasonConflict}

func (g gen) validations(pc paramChoice) []admissionregistrationv1.Validation {
	pool := validationPool(pc)
	n := 1 + g.pick(3)
	var out []admissionregistrationv1.Validation
	for range n {
		v := admissionregistrationv1.Validation{Expression: pickOne(g, pool)}
		if v.Expression == costlyPerCall && g.chance(0.85) {
			v.Expression = "true"
		}
		if g.chance(0.4) {
			v.Message = pickOne(g, []string{"static message", "  spaced  ", "images must come from the registry"})
		}
		if g.chance(0.4) {
			v.MessageExpression = pickOne(g, messageExpressionPool)
		}
		if r := pickOne(g, reasonPool); r != "" {
			v.Reason = &r
		}
		out = append(out, v)
	}
	return out
}

func (g gen) auditAnnotations(pc paramChoice) []admissionregistrationv1.AuditAnnotation {
	pool := []admissionregistrationv1.AuditAnnotation{
		{Key: "image", ValueExpression: "object.spec.containers[0].image"},
		{Key: "owner", ValueExpression: "request.userInfo.username"},
		{Key: "nothing", ValueExpression: "null"},
		{Key: "blank", ValueExpression: "'   '"},
		{Key: "int", ValueExpression: "1"},
		{Key: "dyn", ValueExpression: "dyn(size(object.metadata.name))"},
		{Key: "ns", ValueExpression: "namespaceObject == null ? null : namespaceObject.metadata.uid"},
		{Key: "maybe", ValueExpression: "object.metadata.?labels.?app.orValue(null)"},
	}
	if pc == configMapParams {
		pool = append(pool, admissionregistrationv1.AuditAnnotation{Key: "param", ValueExpression: "params.metadata.name"})
	}
	var out []admissionregistrationv1.AuditAnnotation
	seen := map[string]bool{}
	for range g.pick(3) {
		a := pickOne(g, pool)
		if !seen[a.Key] {
			seen[a.Key] = true
			out = append(out, a)
		}
	}
	return out
}

var actionSets = [][]admissionregistrationv1.ValidationAction{
	{admissionregistrationv1.Deny},
	{admissionregistrationv1.Deny},
	{admissionregistrationv1.Warn},
	{admissionregistrationv1.Audit},
	{admissionregistrationv1.Deny, admissionregistrationv1.Audit},
	{admissionregistrationv1.Warn, admissionregistrationv1.Audit},
}

func (g gen) paramRef(pc paramChoice) *admissionregistrationv1.ParamRef {
	if pc == noParams {
		if g.chance(0.1) {
			return &admissionregistrationv1.ParamRef{Name: "limits"}
		}
		return nil
	}
	if g.chance(0.1) {
		return nil
	}
	pr := &admissionregistrationv1.ParamRef{}
	if g.chance(0.6) {
		pr.Name = pickOne(g, []string{"limits", "strict", "other", "global", "relaxed", "missing"})
	} else {
		pr.Selector = pickOne(g, []*metav1.LabelSelector{
			{MatchLabels: map[string]string{"set": "a"}},
			{MatchLabels: map[string]string{"set": "b"}},
			{},
			{MatchLabels: map[string]string{"set": "none"}},
		})
	}
	if g.chance(0.25) {
		pr.Namespace = pickOne(g, []string{"default", "dev"})
	}
	a := admissionregistrationv1.AllowAction
	if g.chance(0.4) {
		a = admissionregistrationv1.DenyAction
	}
	pr.ParameterNotFoundAction = &a
	return pr
}

func (g gen) world(id int) *world {
	w := &world{params: worldParams()}
	w.namespaces, w.inventory = worldNamespaces()
	nPolicies := 1 + g.pick(4)
	for i := range nPolicies {
		pc := paramChoice(g.pick(4))
		p := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%d-policy-%d", id, i)},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: g.matchResources(true),
				Variables:        g.variables(),
				MatchConditions:  g.matchConditions(),
				Validations:      g.validations(pc),
				AuditAnnotations: g.auditAnnotations(pc),
			},
		}
		switch pc {
		case configMapParams:
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
		case limitsParams:
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "example.com/v1", Kind: "Limits"}
		case clusterLimitsParams:
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "example.com/v1", Kind: "ClusterLimits"}
		}
		switch g.pick(3) {
		case 0:
			f := admissionregistrationv1.Fail
			p.Spec.FailurePolicy = &f
		case 1:
			f := admissionregistrationv1.Ignore
			p.Spec.FailurePolicy = &f
		}
		w.policies = append(w.policies, p)
		for j := range 1 + g.pick(3) {
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%d-binding-%d-%d", id, i, j)},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
					PolicyName:        p.Name,
					ParamRef:          g.paramRef(pc),
					ValidationActions: pickOne(g, actionSets),
				},
			}
			if g.chance(0.35) {
				b.Spec.MatchResources = g.matchResources(false)
			}
			w.bindings = append(w.bindings, b)
		}
	}
	if g.chance(0.05) {
		// A binding whose policy does not exist is ignored.
		w.bindings = append(w.bindings, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%d-orphan", id)},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "missing",
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
		})
	}
	return w
}

// budgetWorld has a policy whose validations together exhaust the 1e7
// per-evaluation budget, and one that exhausts it in its messageExpressions.
func budgetWorld() *world {
	w := &world{params: worldParams()}
	w.namespaces, w.inventory = worldNamespaces()
	var vs []admissionregistrationv1.Validation
	for range 24 {
		vs = append(vs, admissionregistrationv1.Validation{Expression: costlyShare})
	}
	var ms []admissionregistrationv1.Validation
	for i := range 23 {
		v := admissionregistrationv1.Validation{Expression: "true", MessageExpression: "string(" + costlyShare + ")"}
		if i < 12 {
			v.Expression = costlyShare
		}
		ms = append(ms, v)
	}
	rules := []admissionregistrationv1.NamedRuleWithOperations{nrule([]string{"CREATE"}, []string{""}, []string{"v1"}, []string{"pods"})}
	w.policies = []*admissionregistrationv1.ValidatingAdmissionPolicy{
		{ObjectMeta: metav1.ObjectMeta{Name: "budget-validations"}, Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: rules}, Validations: vs}},
		{ObjectMeta: metav1.ObjectMeta{Name: "budget-messages"}, Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: rules}, Validations: ms}},
	}
	w.bindings = []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: "budget-validations"}, Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "budget-validations", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "budget-messages"}, Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "budget-messages", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}}},
	}
	return w
}

var (
	podGVR        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	podGVK        = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	deployGVR     = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	deployGVK     = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	cmGVR         = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	nsGVR         = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	nsGVK         = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	clusterRoleGR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	clusterRoleGK = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}
	execGVK       = schema.GroupVersionKind{Version: "v1", Kind: "PodExecOptions"}
)

func (g gen) labels() map[string]any {
	if g.chance(0.15) {
		return nil
	}
	l := map[string]any{}
	for _, kv := range [][2]string{{"app", "web"}, {"app", "db"}, {"tier", "frontend"}, {"exempt", "true"}, {"env", "forbidden"}} {
		if g.chance(0.3) {
			l[kv[0]] = kv[1]
		}
	}
	return l
}

func (g gen) meta(name, namespace string) map[string]any {
	md := map[string]any{"name": name}
	if namespace != "" {
		md["namespace"] = namespace
	}
	if l := g.labels(); l != nil {
		md["labels"] = l
	}
	if g.chance(0.05) {
		delete(md, "name")
		md["generateName"] = name + "-"
	}
	return md
}

func (g gen) container(i int) map[string]any {
	c := map[string]any{
		"name":  fmt.Sprintf("c%d", i),
		"image": pickOne(g, []string{"nginx:1.25", "registry.example.com/app:v1", "busybox", "evil.io/x:latest", "docker.io/library/redis:7"}),
	}
	if g.chance(0.4) {
		sc := map[string]any{}
		if g.chance(0.5) {
			sc["privileged"] = g.chance(0.3)
		}
		if g.chance(0.5) {
			sc["runAsNonRoot"] = g.chance(0.7)
		}
		c["securityContext"] = sc
	}
	if g.chance(0.5) {
		c["resources"] = map[string]any{"limits": map[string]any{"cpu": pickOne(g, []string{"500m", "2", "3"}), "memory": "128Mi"}}
	}
	return c
}

func (g gen) podObject(name, namespace string) map[string]any {
	var cs []any
	for i := range 1 + g.pick(3) {
		cs = append(cs, g.container(i))
	}
	spec := map[string]any{"containers": cs}
	if g.chance(0.2) {
		spec["hostNetwork"] = g.chance(0.5)
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": g.meta(name, namespace), "spec": spec}
}

func (g gen) request(w *world) *request {
	ns := pickOne(g, []string{"default", "default", "dev", "kube-system", "legacy"})
	name := pickOne(g, []string{"web", "db", "protected", "limits", "a"})
	uname := pickOne(g, []string{"alice", "bob", "mallory"})
	er := &evaluator.Request{Name: name, Namespace: ns, DryRun: g.chance(0.1)}
	var opts runtime.Object
	switch g.pick(9) {
	case 0, 1: // pod create
		er.RequestKind, er.RequestResource, er.Operation = podGVK, podGVR, "CREATE"
		er.Object = g.podObject(name, ns)
		opts = &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{Kind: "CreateOptions", APIVersion: "meta.k8s.io/v1"}}
		if g.chance(0.3) {
			er.Name = ""
		}
	case 2: // pod update
		er.RequestKind, er.RequestResource, er.Operation = podGVK, podGVR, "UPDATE"
		er.Object, er.OldObject = g.podObject(name, ns), g.podObject(name, ns)
		opts = &metav1.UpdateOptions{TypeMeta: metav1.TypeMeta{Kind: "UpdateOptions", APIVersion: "meta.k8s.io/v1"}}
	case 3: // pod delete or status update
		er.RequestKind, er.RequestResource = podGVK, podGVR
		if g.chance(0.5) {
			er.Operation = "DELETE"
			er.OldObject = g.podObject(name, ns)
			opts = &metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{Kind: "DeleteOptions", APIVersion: "meta.k8s.io/v1"}}
		} else {
			er.Operation, er.RequestSubResource = "UPDATE", "status"
			er.Object, er.OldObject = g.podObject(name, ns), g.podObject(name, ns)
			opts = &metav1.UpdateOptions{TypeMeta: metav1.TypeMeta{Kind: "UpdateOptions", APIVersion: "meta.k8s.io/v1"}}
		}
	case 4: // pod exec, attach or portforward: options kinds without ObjectMeta
		er.RequestKind, er.RequestResource, er.Operation, er.RequestSubResource = execGVK, podGVR, "CONNECT", "exec"
		er.Object = map[string]any{"apiVersion": "v1", "kind": "PodExecOptions", "command": []any{"sh"}, "stdin": true}
		switch g.pick(3) {
		case 1:
			er.RequestKind, er.RequestSubResource = schema.GroupVersionKind{Version: "v1", Kind: "PodAttachOptions"}, "attach"
			er.Object = map[string]any{"apiVersion": "v1", "kind": "PodAttachOptions", "stdout": true}
		case 2:
			er.RequestKind, er.RequestSubResource = schema.GroupVersionKind{Version: "v1", Kind: "PodPortForwardOptions"}, "portforward"
			er.Object = map[string]any{"apiVersion": "v1", "kind": "PodPortForwardOptions", "ports": []any{int64(8080)}}
		}
	case 5: // deployment
		er.RequestKind, er.RequestResource, er.Operation = deployGVK, deployGVR, pickOne(g, []admissionregistrationv1.OperationType{"CREATE", "UPDATE"})
		er.Object = map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": g.meta(name, ns),
			"spec": map[string]any{"replicas": int64(g.pick(8)), "template": map[string]any{"spec": g.podObject(name, ns)["spec"]}}}
		if er.Operation == "UPDATE" {
			er.OldObject = map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": g.meta(name, ns), "spec": map[string]any{"replicas": int64(1)}}
		}
	case 6: // configmap
		er.RequestKind, er.RequestResource, er.Operation = configMapGVK, cmGVR, pickOne(g, []admissionregistrationv1.OperationType{"CREATE", "DELETE"})
		cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": g.meta(name, ns), "data": map[string]any{"k": "v"}}
		if er.Operation == "DELETE" {
			er.OldObject = cm
		} else {
			er.Object = cm
		}
	case 7: // namespace
		er.RequestKind, er.RequestResource = nsGVK, nsGVR
		if g.chance(0.5) {
			er.Operation, er.Name, er.Namespace = "CREATE", "newns", "newns"
			er.Object = map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": g.meta("newns", "")}
		} else {
			target := pickOne(g, []string{"default", "dev", "legacy"})
			er.Operation, er.Name, er.Namespace = "DELETE", target, target
			er.OldObject = map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": target}}
		}
	default: // cluster-scoped
		er.RequestKind, er.RequestResource, er.Operation, er.Namespace = clusterRoleGK, clusterRoleGR, "CREATE", ""
		er.Object = map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": g.meta(name, ""), "rules": []any{}}
	}
	er.Kind, er.Resource, er.SubResource = er.RequestKind, er.RequestResource, er.RequestSubResource
	if er.Object != nil {
		er.Object = sentObject(er.Kind, er.Object)
	}
	if er.OldObject != nil {
		er.OldObject = sentObject(er.Kind, er.OldObject)
	}
	if opts != nil {
		er.Options = runtime.RawExtension{Raw: mustJSON(opts)}
	}
	groups := []string{"system:authenticated", pickOne(g, []string{"dev", "ops"})}
	er.UserInfo = authenticationv1.UserInfo{Username: uname, UID: "uid-" + uname, Groups: groups,
		Extra: map[string]authenticationv1.ExtraValue{"scopes": {"a"}}}
	ui := &user.DefaultInfo{Name: uname, UID: "uid-" + uname, Groups: groups, Extra: map[string][]string{"scopes": {"a"}}}
	return &request{evalReq: er, options: opts, userInfo: ui, namespace: er.Namespace}
}
