package differential

import (
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// subresourceKind is a kind the built-in API sends to admission for a
// subresource, with a request of it as the apiserver sends it.
type subresourceKind struct {
	name string // resource/subresource
	op   admissionregistrationv1.OperationType
	gvk  schema.GroupVersionKind
	gvr  schema.GroupVersionResource
	sub  string
	ns   string
	obj  map[string]any // less apiVersion and kind
	old  map[string]any
	// apply and patch are an apply configuration and a JSON patch that
	// change the object.
	apply, patch string
}

func (k subresourceKind) request() *request {
	obj := func(m map[string]any) map[string]any {
		if m == nil {
			return nil
		}
		out := map[string]any{"apiVersion": k.gvk.GroupVersion().String(), "kind": k.gvk.Kind}
		for f, v := range m {
			out[f] = v
		}
		return sentObject(k.gvk, out)
	}
	er := &evaluator.Request{Kind: k.gvk, Resource: k.gvr, SubResource: k.sub, RequestKind: k.gvk, RequestResource: k.gvr,
		RequestSubResource: k.sub, Name: "web", Namespace: k.ns, Operation: k.op, Object: obj(k.obj), OldObject: obj(k.old)}
	return withUser(er, nil)
}

var (
	scaleGVK = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
	labelAC  = `Object{metadata: Object.metadata{labels: {"capped": "yes"}}}`
)

func scaleKind(group, resource string) subresourceKind {
	scale := func(n int64) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": "web", "namespace": "default", "uid": "u1", "resourceVersion": "7"},
			"spec": map[string]any{"replicas": n}, "status": map[string]any{"replicas": int64(2), "selector": "app=web"}}
	}
	return subresourceKind{name: resource + "/scale", op: "UPDATE", gvk: scaleGVK,
		gvr: schema.GroupVersionResource{Group: group, Version: "v1", Resource: resource}, sub: "scale", ns: "default",
		obj: scale(9), old: scale(2),
		apply: `Object{spec: Object.spec{replicas: object.spec.replicas > 5 ? 5 : object.spec.replicas}}`,
		patch: `object.spec.replicas > 5 ? [JSONPatch{op: "replace", path: "/spec/replicas", value: 5}] : []`}
}

func connectKind(resource, sub, kind, ns string, obj map[string]any, apply, patch string) subresourceKind {
	return subresourceKind{name: resource + "/" + sub, op: "CONNECT", gvk: schema.GroupVersionKind{Version: "v1", Kind: kind},
		gvr: schema.GroupVersionResource{Version: "v1", Resource: resource}, sub: sub, ns: ns, obj: obj, apply: apply, patch: patch}
}

func statusKind(group, resource, kind string, obj map[string]any, apply, patch string) subresourceKind {
	gv := schema.GroupVersion{Group: group, Version: "v1"}
	return subresourceKind{name: resource + "/status", op: "UPDATE", gvk: gv.WithKind(kind), gvr: gv.WithResource(resource),
		sub: "status", ns: "default", obj: obj, old: obj, apply: apply, patch: patch}
}

// subresourceKinds is every kind the built-in API admits for a
// subresource, with the parent kind of a status subresource twice.
func subresourceKinds() []subresourceKind {
	meta := map[string]any{"name": "web", "namespace": "default"}
	path := map[string]any{"path": "/healthz"}
	pathAC := `Object{path: "/metrics"}`
	pathJP := `[JSONPatch{op: "replace", path: "/path", value: "/metrics"}]`
	deployment := map[string]any{"metadata": meta, "spec": map[string]any{"replicas": int64(2),
		"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
		"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx"}}}}},
		"status": map[string]any{"replicas": int64(2), "readyReplicas": int64(1)}}
	pod := map[string]any{"metadata": meta, "spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx"}}},
		"status": map[string]any{"phase": "Running", "conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}}
	return []subresourceKind{
		scaleKind("apps", "deployments"),
		scaleKind("apps", "replicasets"),
		scaleKind("apps", "statefulsets"),
		scaleKind("", "replicationcontrollers"),
		connectKind("pods", "exec", "PodExecOptions", "default", map[string]any{"command": []any{"sh"}, "stdin": true, "container": "app"},
			`Object{stdin: false}`, `[JSONPatch{op: "replace", path: "/command", value: ["date"]}]`),
		connectKind("pods", "attach", "PodAttachOptions", "default", map[string]any{"stdout": true, "container": "app"},
			`Object{tty: false}`, `[JSONPatch{op: "add", path: "/stderr", value: true}]`),
		connectKind("pods", "portforward", "PodPortForwardOptions", "default", map[string]any{"ports": []any{int64(8080)}},
			`Object{ports: [9090]}`, `[JSONPatch{op: "add", path: "/ports/-", value: 9090}]`),
		connectKind("pods", "proxy", "PodProxyOptions", "default", path, pathAC, pathJP),
		connectKind("nodes", "proxy", "NodeProxyOptions", "", path, pathAC, pathJP),
		connectKind("services", "proxy", "ServiceProxyOptions", "default", path, pathAC, pathJP),
		{name: "pods/eviction", op: "CREATE", gvk: schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"},
			gvr: podGVR, sub: "eviction", ns: "default",
			obj:   map[string]any{"metadata": meta, "deleteOptions": map[string]any{"gracePeriodSeconds": int64(30)}},
			apply: labelAC, patch: `[JSONPatch{op: "replace", path: "/deleteOptions/gracePeriodSeconds", value: 0}]`},
		{name: "pods/binding", op: "CREATE", gvk: schema.GroupVersionKind{Version: "v1", Kind: "Binding"},
			gvr: podGVR, sub: "binding", ns: "default",
			obj:   map[string]any{"metadata": meta, "target": map[string]any{"kind": "Node", "name": "node-1"}},
			apply: `Object{metadata: Object.metadata{annotations: {"bound": "node-1"}}}`,
			patch: `[JSONPatch{op: "replace", path: "/target/name", value: "node-2"}]`},
		{name: "serviceaccounts/token", op: "CREATE", gvk: schema.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"},
			gvr: schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, sub: "token", ns: "default",
			obj:   map[string]any{"metadata": meta, "spec": map[string]any{"audiences": []any{"api"}, "expirationSeconds": int64(86400)}},
			apply: `Object{spec: Object.spec{expirationSeconds: 3600}}`,
			patch: `[JSONPatch{op: "replace", path: "/spec/expirationSeconds", value: 3600}]`},
		statusKind("apps", "deployments", "Deployment", deployment,
			`Object{status: Object.status{readyReplicas: 2}}`, `[JSONPatch{op: "replace", path: "/status/readyReplicas", value: 2}]`),
		statusKind("", "pods", "Pod", pod,
			`Object{status: Object.status{phase: "Succeeded"}}`, `[JSONPatch{op: "replace", path: "/status/phase", value: "Succeeded"}]`),
	}
}

// TestSubresourceMutations holds mutations of every subresource kind, an
// apply configuration and a JSON patch each, under both failure policies,
// to the plugin's answers and final objects: the plugin has a type
// converter for every built-in group-version, whose document may not hold
// the kind (then the apply configuration fails, the JSON patch applies).
func TestSubresourceMutations(t *testing.T) {
	fast0, declined0 := evaluator.FastMutationCounts()
	defer func() {
		fast, declined := evaluator.FastMutationCounts()
		t.Logf("fast path: %d answered, %d declined", fast-fast0, declined-declined0)
	}()
	for _, k := range subresourceKinds() {
		for _, patchType := range []string{"apply", "jsonpatch"} {
			for _, f := range []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore} {
				t.Run(fmt.Sprintf("%s %s %s", k.name, patchType, f), func(t *testing.T) {
					mutation := ac(k.apply)
					if patchType == "jsonpatch" {
						mutation = jp(k.patch)
					}
					p := mpol("p", onlyResources(k.name), mutation, func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
						p.Spec.FailurePolicy = &f
					})
					runMutateCase(t, mworld(p), k.request())
				})
			}
		}
	}
}

// TestSubresourceMutationsApply pins what the plugin does with each kind,
// so that a change of the oracle's documents cannot make the cases above
// vacuous: the apply configurations fail exactly where the group-version's
// document lacks the kind, every JSON patch applies.
func TestSubresourceMutationsApply(t *testing.T) {
	unpublished := map[string]bool{} // kinds whose group-version's document lacks them
	for _, k := range subresourceKinds() {
		if k.gvk.Kind == "Scale" || strings.HasSuffix(k.gvk.Kind, "Options") || k.gvk.Kind == "Eviction" || k.gvk.Kind == "TokenRequest" {
			unpublished[k.name] = true
		}
	}
	for _, k := range subresourceKinds() {
		for _, patchType := range []string{"apply", "jsonpatch"} {
			mutation := ac(k.apply)
			if patchType == "jsonpatch" {
				mutation = jp(k.patch)
			}
			w := mworld(mpol("p", onlyResources(k.name), mutation))
			for _, p := range w.mutatingPolicies {
				evaluator.SetMutatingPolicyDefaults(p)
			}
			for _, b := range w.mutatingBindings {
				evaluator.SetMutatingBindingDefaults(b)
			}
			p := newMutatingPlugin(t, w)
			got := p.mutate(t, k.request())
			p.close()
			wantFail := patchType == "apply" && unpublished[k.name]
			switch {
			case wantFail && (got.allowed || got.status == nil || !strings.Contains(got.status.Message, "no corresponding type for "+k.gvk.String())):
				t.Errorf("%s %s: plugin allowed %v status %s, want no corresponding type", k.name, patchType, got.allowed, js(got.status))
			case !wantFail && (!got.allowed || !got.changed):
				t.Errorf("%s %s: plugin allowed %v changed %v status %s, want a change", k.name, patchType, got.allowed, got.changed, js(got.status))
			}
		}
	}
}

// TestSubresourceValidations holds a validating policy on every
// subresource kind to the plugin's answers: a validation that reads the
// object, denying and allowing, and a match condition.
func TestSubresourceValidations(t *testing.T) {
	var reqs []*request
	var resources []string
	for _, k := range subresourceKinds() {
		reqs = append(reqs, k.request())
		resources = append(resources, k.name)
	}
	exprs := map[string]string{
		"reads the object": `has(object.metadata) || has(object.path) || has(object.ports) || has(object.command) || has(object.stdout)`,
		"denies":           `object == null`,
		"reads a field":    `!has(object.spec) || !has(object.spec.replicas) || object.spec.replicas <= 5`,
		"old object":       `oldObject == null || object != oldObject`,
	}
	var st diffStats
	for name, expr := range exprs {
		w := &world{params: worldParams()}
		w.namespaces, w.inventory = worldNamespaces()
		mr := &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
			nrule([]string{"CREATE", "UPDATE", "CONNECT"}, []string{"*"}, []string{"*"}, resources)}}
		p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "sub"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{MatchConstraints: mr,
				MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "kind", Expression: `request.kind.kind != ""`}},
				Validations:     []admissionregistrationv1.Validation{{Expression: expr, MessageExpression: `"no " + request.kind.kind + " on " + request.subResource`}}}}
		b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "sub"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "sub",
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
		w.policies = []*admissionregistrationv1.ValidatingAdmissionPolicy{p}
		w.bindings = []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
		runWorld(t, "subresources "+name, w, reqs, &st)
	}
	t.Logf("%+v", st)
	if st.cases != len(exprs)*len(reqs) || st.denied < len(reqs) || st.allowed < len(reqs) {
		t.Errorf("the cases test less than they say: %+v", st)
	}
}
