package differential

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// Builders of MutatingAdmissionPolicies for the differential cases.

type mapOpt func(*admissionregistrationv1.MutatingAdmissionPolicy)

func mpol(name string, opts ...mapOpt) *admissionregistrationv1.MutatingAdmissionPolicy {
	p := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
				nrule([]string{"CREATE", "UPDATE", "CONNECT"}, []string{"", "apps", "example.com"}, []string{"*"}, []string{"*"}),
			}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func ac(expr string) mapOpt {
	return func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
		p.Spec.Mutations = append(p.Spec.Mutations, admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: expr}})
	}
}

func jp(expr string) mapOpt {
	return func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
		p.Spec.Mutations = append(p.Spec.Mutations, admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
			JSONPatch: &admissionregistrationv1.JSONPatch{Expression: expr}})
	}
}

func ignore(p *admissionregistrationv1.MutatingAdmissionPolicy) {
	f := admissionregistrationv1.Ignore
	p.Spec.FailurePolicy = &f
}

func ifNeeded(p *admissionregistrationv1.MutatingAdmissionPolicy) {
	p.Spec.ReinvocationPolicy = admissionregistrationv1.IfNeededReinvocationPolicy
}

func mcond(name, expr string) mapOpt {
	return func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
		p.Spec.MatchConditions = append(p.Spec.MatchConditions, admissionregistrationv1.MatchCondition{Name: name, Expression: expr})
	}
}

func mvar(name, expr string) mapOpt {
	return func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
		p.Spec.Variables = append(p.Spec.Variables, admissionregistrationv1.Variable{Name: name, Expression: expr})
	}
}

func withParams(apiVersion, kind string) mapOpt {
	return func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
		p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: apiVersion, Kind: kind}
	}
}

func onlyResources(resources ...string) mapOpt {
	return func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
		p.Spec.MatchConstraints.ResourceRules = []admissionregistrationv1.NamedRuleWithOperations{
			nrule([]string{"CREATE", "UPDATE", "CONNECT"}, []string{"*"}, []string{"*"}, resources)}
	}
}

// mbind binds a policy, with a paramRef when given.
func mbind(policy string, ref *admissionregistrationv1.ParamRef) *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	return &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy + "-binding"},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: policy, ParamRef: ref},
	}
}

// mworld is a cluster with the given policies, each bound once.
func mworld(policies ...*admissionregistrationv1.MutatingAdmissionPolicy) *world {
	w := &world{params: worldParams()}
	w.namespaces, w.inventory = worldNamespaces()
	for _, p := range policies {
		w.mutatingPolicies = append(w.mutatingPolicies, p)
		w.mutatingBindings = append(w.mutatingBindings, mbind(p.Name, nil))
	}
	return w
}

func withRef(w *world, policy string, ref admissionregistrationv1.ParamRef) *world {
	for _, b := range w.mutatingBindings {
		if b.Spec.PolicyName == policy {
			b.Spec.ParamRef = &ref
		}
	}
	return w
}

// mrequest is a request of the given kind and operation on an object.
func mrequest(op admissionregistrationv1.OperationType, gvk, gvr any, obj, old map[string]any) *request {
	er := &evaluator.Request{Name: "web", Namespace: "default", Operation: op, Object: obj, OldObject: old}
	switch k := gvk.(type) {
	case [2]string:
		_ = k
	}
	er.UserInfo = authenticationv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}}
	opts := &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{Kind: "CreateOptions", APIVersion: "meta.k8s.io/v1"}}
	er.Options = runtime.RawExtension{Raw: mustJSON(opts)}
	return &request{evalReq: er, options: opts, userInfo: &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}, namespace: "default"}
}

func podCreate(obj map[string]any) *request {
	r := mrequest("CREATE", nil, nil, obj, nil)
	r.evalReq.RequestKind, r.evalReq.RequestResource = podGVK, podGVR
	r.evalReq.Kind, r.evalReq.Resource = podGVK, podGVR
	return r
}

func webPod() map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web", "namespace": "default", "labels": map[string]any{"app": "web", "a/b": "1"}},
		"spec": map[string]any{"containers": []any{
			map[string]any{"name": "app", "image": "nginx:1.25", "args": []any{"-v"}},
			map[string]any{"name": "side", "image": "busybox", "resources": map[string]any{"limits": map[string]any{"cpu": "1"}}},
		}}}
}

// mutateCase is one hand-written differential case.
type mutateCase struct {
	name string
	w    *world
	r    *request
}

func mutateCases() []mutateCase {
	label := func(k, v string) string {
		return fmt.Sprintf(`Object{metadata: Object.metadata{labels: {%q: %s}}}`, k, v)
	}
	crd := mrequest("CREATE", nil, nil, map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "web", "namespace": "default"}, "spec": map[string]any{"size": int64(1)}}, nil)
	crd.evalReq.RequestKind = crd.evalReq.Kind
	crd.evalReq.Kind.Group, crd.evalReq.Kind.Version, crd.evalReq.Kind.Kind = "example.com", "v1", "Widget"
	crd.evalReq.RequestKind = crd.evalReq.Kind
	crd.evalReq.Resource.Group, crd.evalReq.Resource.Version, crd.evalReq.Resource.Resource = "example.com", "v1", "widgets"
	crd.evalReq.RequestResource = crd.evalReq.Resource

	deploy := mrequest("UPDATE", nil, nil, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "default"},
		"spec": map[string]any{"replicas": int64(2), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}}, "spec": webPod()["spec"]}}},
		map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "default"}})
	deploy.evalReq.Kind, deploy.evalReq.RequestKind, deploy.evalReq.Resource, deploy.evalReq.RequestResource = deployGVK, deployGVK, deployGVR, deployGVR

	del := mrequest("DELETE", nil, nil, nil, webPod())
	del.evalReq.Kind, del.evalReq.RequestKind, del.evalReq.Resource, del.evalReq.RequestResource = podGVK, podGVK, podGVR, podGVR

	exec := mrequest("CONNECT", nil, nil, map[string]any{"apiVersion": "v1", "kind": "PodExecOptions", "command": []any{"sh"}, "stdin": true}, nil)
	exec.evalReq.Kind, exec.evalReq.RequestKind, exec.evalReq.Resource, exec.evalReq.RequestResource = execGVK, execGVK, podGVR, podGVR
	exec.evalReq.SubResource, exec.evalReq.RequestSubResource = "exec", "exec"

	noObject := mrequest("CONNECT", nil, nil, nil, nil)
	noObject.evalReq.Kind, noObject.evalReq.RequestKind, noObject.evalReq.Resource, noObject.evalReq.RequestResource = execGVK, execGVK, podGVR, podGVR
	noObject.evalReq.SubResource, noObject.evalReq.RequestSubResource = "exec", "exec"

	return []mutateCase{
		{"no object, binding error", withRef(mworld(mpol("p", onlyResources("pods/exec"), withParams("v1", "ConfigMap"), ac(label("x", `"1"`)))),
			"p", admissionregistrationv1.ParamRef{Name: "missing", ParameterNotFoundAction: ptr(admissionregistrationv1.DenyAction)}), noObject},
		{"configuration errors come before mutation errors", withRef(mworld(
			mpol("a", jp(`[JSONPatch{op: "remove", path: "/nope"}]`)),
			mpol("b", withParams("v1", "ConfigMap"), ac(label("x", `"1"`)))),
			"b", admissionregistrationv1.ParamRef{Name: "missing", ParameterNotFoundAction: ptr(admissionregistrationv1.DenyAction)}), podCreate(webPod())},
		{"mutation without an expression", mworld(mpol("p", ac(label("x", `"1"`)), func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Spec.Mutations = append(p.Spec.Mutations, admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch})
		})), podCreate(webPod())},
		{"no object", mworld(mpol("p", onlyResources("pods/exec"), mcond("t", "object == null"), ac(label("x", `"1"`)))), noObject},
		{"apply map merge", mworld(mpol("p", ac(label("team", `"a"`)))), podCreate(webPod())},
		{"apply keyed list by name", mworld(mpol("p", ac(`Object{spec: Object.spec{containers: [Object.spec.containers{name: "side", image: "busybox:2"}, Object.spec.containers{name: "new", image: "x"}]}}`))), podCreate(webPod())},
		{"apply atomic list refused", mworld(mpol("p", ac(`Object{spec: Object.spec{containers: [Object.spec.containers{name: "app", args: ["-q"]}]}}`))), podCreate(webPod())},
		{"apply atomic list refused, ignored", mworld(mpol("p", ignore, ac(`Object{spec: Object.spec{containers: [Object.spec.containers{name: "app", args: ["-q"]}]}}`))), podCreate(webPod())},
		{"apply scalars", mworld(mpol("p", ac(`Object{spec: Object.spec{hostNetwork: false, restartPolicy: "Never", priority: 3}}`))), podCreate(webPod())},
		{"apply nested struct", mworld(mpol("p", ac(`Object{spec: Object.spec{securityContext: Object.spec.securityContext{seccompProfile: Object.spec.securityContext.seccompProfile{type: "RuntimeDefault"}}}}`))), podCreate(webPod())},
		{"apply type mismatch", mworld(mpol("p", ac(`Object{spec: Object.spec{securityContext: Object.spec.containers{name: "x"}}}`))), podCreate(webPod())},
		{"apply wrong field type", mworld(mpol("p", ac(`Object{spec: Object.spec{hostNetwork: "yes"}}`))), podCreate(webPod())},
		{"apply unknown field", mworld(mpol("p", ac(`Object{spec: Object.spec{bogus: "yes"}}`))), podCreate(webPod())},
		{"apply unknown field, ignored", mworld(mpol("p", ignore, ac(`Object{spec: Object.spec{bogus: "yes"}}`))), podCreate(webPod())},
		{"apply deployment template", mworld(mpol("p", ac(`Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: "app", imagePullPolicy: "Always"}]}}}}`))), deploy},
		{"apply no-op", mworld(mpol("p", ac(label("app", `"web"`)))), podCreate(webPod())},
		{"json patch ops", mworld(mpol("p", jp(`[
			JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("x/y~z"), value: "1"},
			JSONPatch{op: "replace", path: "/metadata/labels/app", value: "api"},
			JSONPatch{op: "remove", path: "/metadata/labels/" + jsonpatch.escapeKey("a/b")},
			JSONPatch{op: "test", path: "/spec/containers/0/name", value: "app"},
			JSONPatch{op: "copy", from: "/spec/containers/0/image", path: "/spec/containers/1/image"},
			JSONPatch{op: "move", from: "/metadata/labels/app", path: "/metadata/labels/moved"},
			JSONPatch{op: "add", path: "/spec/containers/-", value: Object.spec.containers{name: "last", image: "y"}},
			JSONPatch{op: "add", path: "/spec/containers/0/args/0", value: "first"}
		]`))), podCreate(webPod())},
		{"json patch failed test is a no-op", mworld(mpol("p", ifNeeded, jp(`[JSONPatch{op: "test", path: "/metadata/name", value: "other"}, JSONPatch{op: "add", path: "/metadata/labels/x", value: "1"}]`))), podCreate(webPod())},
		{"json patch replace of a missing key", mworld(mpol("p", jp(`[JSONPatch{op: "replace", path: "/metadata/annotations", value: {"a": "b"}}]`))), podCreate(webPod())},
		{"json patch remove of a missing key", mworld(mpol("p", jp(`[JSONPatch{op: "remove", path: "/metadata/annotations/x"}]`))), podCreate(webPod())},
		{"json patch remove of a missing key, ignored", mworld(mpol("p", ignore, jp(`[JSONPatch{op: "remove", path: "/metadata/annotations/x"}]`))), podCreate(webPod())},
		{"json patch unknown field, ignored", mworld(mpol("p", ignore, jp(`[JSONPatch{op: "add", path: "/spec/bogus", value: "x"}]`))), podCreate(webPod())},
		{"json patch wrong type, ignored", mworld(mpol("p", ignore, jp(`[JSONPatch{op: "replace", path: "/spec/containers", value: "x"}]`))), podCreate(webPod())},
		{"json patch invalid object, then a valid mutation", mworld(mpol("p", jp(`[JSONPatch{op: "add", path: "/metadata/labels", value: 1}]`), ac(label("after", `"1"`)))), podCreate(webPod())},
		{"json patch index out of range", mworld(mpol("p", jp(`[JSONPatch{op: "add", path: "/spec/containers/9", value: Object.spec.containers{name: "z"}}]`))), podCreate(webPod())},
		{"several policies in order", mworld(
			mpol("a-first", ac(label("x", `"1"`))),
			mpol("b-second", ac(label("y", `object.metadata.labels["x"] + "2"`))),
			mpol("c-third", jp(`[JSONPatch{op: "replace", path: "/metadata/labels/y", value: object.metadata.labels["y"] + "3"}]`))), podCreate(webPod())},
		{"an error among several policies", mworld(
			mpol("a-first", ac(label("x", `"1"`))),
			mpol("b-second", jp(`[JSONPatch{op: "remove", path: "/nope"}]`)),
			mpol("c-third", ac(label("z", `"3"`)))), podCreate(webPod())},
		{"params", withRef(mworld(mpol("p", withParams("v1", "ConfigMap"),
			ac(`Object{spec: Object.spec{containers: object.spec.containers.map(c, Object.spec.containers{name: c.name, image: params.data.registry + "/" + c.image})}}`))),
			"p", admissionregistrationv1.ParamRef{Name: "limits", ParameterNotFoundAction: ptr(admissionregistrationv1.DenyAction)}), podCreate(webPod())},
		{"params not found", withRef(mworld(mpol("p", withParams("v1", "ConfigMap"), ac(label("x", `params.data.registry`)))),
			"p", admissionregistrationv1.ParamRef{Name: "missing", ParameterNotFoundAction: ptr(admissionregistrationv1.DenyAction)}), podCreate(webPod())},
		{"params by selector", withRef(mworld(mpol("p", withParams("v1", "ConfigMap"), jp(`[JSONPatch{op: "add", path: "/metadata/labels/" + params.metadata.name, value: params.data.maxContainers}]`))),
			"p", admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{}, ParameterNotFoundAction: ptr(admissionregistrationv1.AllowAction)}), podCreate(webPod())},
		{"matchCondition false", mworld(mpol("p", mcond("never", "false"), ac(label("x", `"1"`)))), podCreate(webPod())},
		{"matchCondition error", mworld(mpol("p", mcond("bad", "object.metadata.labels.nope == 'x'"), ac(label("x", `"1"`)))), podCreate(webPod())},
		{"matchCondition error, ignored", mworld(mpol("p", ignore, mcond("bad", "object.metadata.labels.nope == 'x'"), ac(label("x", `"1"`)))), podCreate(webPod())},
		{"matchCondition sees the earlier mutation", mworld(
			mpol("a", ac(label("x", `"1"`))),
			mpol("b", mcond("x", "'x' in object.metadata.labels"), ac(label("seen", `"yes"`)))), podCreate(webPod())},
		{"runtime error", mworld(mpol("p", ac(label("x", `object.metadata.labels["nope"]`)))), podCreate(webPod())},
		{"runtime error, ignored", mworld(mpol("p", ignore, ac(label("x", `object.metadata.labels["nope"]`)))), podCreate(webPod())},
		{"compile error", mworld(mpol("p", ac(`Object{spec: nope}`))), podCreate(webPod())},
		{"variables", mworld(mpol("p", mvar("n", "size(object.spec.containers)"), mvar("s", `"c" + string(variables.n)`),
			ac(label("count", `variables.s`)), ac(label("again", `variables.s`)))), podCreate(webPod())},
		{"namespaceObject", mworld(mpol("p", ac(label("env", `namespaceObject.metadata.labels["env"]`)))), podCreate(webPod())},
		{"request fields", mworld(mpol("p", ac(label("user", `request.userInfo.username + "-" + request.operation`)))), podCreate(webPod())},
		{"reinvocation of a non-idempotent mutation", mworld(mpol("p", ifNeeded,
			jp(`[JSONPatch{op: "add", path: "/spec/containers/-", value: Object.spec.containers{name: "c" + string(size(object.spec.containers)), image: "y"}}]`))), podCreate(webPod())},
		{"reinvocation after a later policy changes the object", mworld(
			mpol("a", ifNeeded, ac(label("n", `string(size(object.metadata.labels))`))),
			mpol("b", ac(label("b", `"1"`)))), podCreate(webPod())},
		{"no reinvocation of Never", mworld(
			mpol("a", jp(`[JSONPatch{op: "add", path: "/spec/containers/-", value: Object.spec.containers{name: "c" + string(size(object.spec.containers)), image: "y"}}]`)),
			mpol("b", ac(label("b", `"1"`)))), podCreate(webPod())},
		{"IfNeeded skipped by its matchCondition in the first pass", mworld(
			mpol("a", ifNeeded, mcond("b", "'b' in object.metadata.labels"), ac(label("n", `string(size(object.metadata.labels))`))),
			mpol("b", ac(label("b", `"1"`)))), podCreate(webPod())},
		{"reinvocation that fails the second time", mworld(mpol("p", ifNeeded,
			jp(`[JSONPatch{op: "test", path: "/metadata/labels/app", value: "web"}, JSONPatch{op: "add", path: "/metadata/labels/n", value: "1"}]`),
			jp(`[JSONPatch{op: "remove", path: "/metadata/labels/" + jsonpatch.escapeKey("a/b")}]`))), podCreate(webPod())},
		{"unknown kind", mworld(mpol("p", ac(`Object{spec: Object.spec{size: 2}}`))), crd},
		{"unknown kind, ignored", mworld(mpol("p", ignore, jp(`[JSONPatch{op: "add", path: "/spec/size", value: 2}]`))), crd},
		{"delete is not mutated", mworld(mpol("p", ac(label("x", `"1"`)))), del},
		{"connect", mworld(mpol("p", onlyResources("pods/exec"), jp(`[JSONPatch{op: "add", path: "/command/-", value: "-c"}]`))), exec},
		{"typed view after a matchCondition", mworld(mpol("p", mcond("t", "true"), ac(label("t", `string(object.spec.containers[0].resources == {})`)))), podCreate(webPod())},
		{"type-confused comparison, typed view", mworld(mpol("p", mcond("t", "true"), ac(label("t", `string([object.spec.hostNetwork] == [1])`)))), podCreate(webPod())},
		{"type-confused comparison, JSON view", mworld(mpol("p", ac(label("t", `string([object.spec.hostNetwork] == [1])`)))), podCreate(webPod())},
		{"int key in labels, typed view", mworld(mpol("p", mcond("t", "true"), ac(label("t", `string(1 in object.metadata.labels)`)))), podCreate(webPod())},
		{"int key in labels, JSON view", mworld(mpol("p", ac(label("t", `string(1 in object.metadata.labels)`)))), podCreate(webPod())},
		{"unsigned index, typed view after an earlier policy's matchCondition", mworld(
			mpol("a", mcond("t", "true"), ac(label("a", `"1"`))),
			mpol("b", ac(label("t", `object.spec.containers[0u].name`)))), podCreate(webPod())},
		{"unsigned index, JSON view", mworld(mpol("p", ac(label("t", `object.spec.containers[0u].name`)))), podCreate(webPod())},
		{"json view without a matchCondition", mworld(mpol("p", ac(label("t", `string(has(object.spec.containers[0].resources))`)))), podCreate(webPod())},
	}
}

// TestMutateDifferential holds Snapshot.Mutate to the apiserver's
// MutatingAdmissionPolicy plugin on hand-written cases: the final object
// (the evaluator's patch applied to the request's object), whether it
// changed, and the verdict and status must be the same.
func TestMutateDifferential(t *testing.T) {
	fast0, declined0 := evaluator.FastMutationCounts()
	defer func() {
		fast, declined := evaluator.FastMutationCounts()
		t.Logf("fast path: %d answered, %d declined", fast-fast0, declined-declined0)
	}()
	for _, tc := range mutateCases() {
		t.Run(tc.name, func(t *testing.T) {
			runMutateCase(t, tc.w, tc.r)
		})
	}
}

func runMutateCase(t *testing.T, w *world, r *request) {
	t.Helper()
	for _, p := range w.mutatingPolicies {
		evaluator.SetMutatingPolicyDefaults(p)
	}
	for _, b := range w.mutatingBindings {
		evaluator.SetMutatingBindingDefaults(b)
	}
	p := newMutatingPlugin(t, w)
	defer p.close()
	snap := compileMutating(w)
	want := p.mutate(t, r)
	sent := runtime.DeepCopyJSON(r.evalReq.Object)
	res := snap.Evaluate(context.Background(), evaluator.Mutating, r.evalReq, evaluator.WithNamespaces(w.inventory))
	if r.evalReq.Object != nil && !reflect.DeepEqual(sent, r.evalReq.Object) {
		t.Errorf("Mutate modified the request's object")
	}
	got := evaluatorMutation(t, r, res)
	compareMutation(t, r, res, want, got)
	code := int32(0)
	if want.status != nil {
		code = want.status.Code
	}
	t.Logf("allowed %v changed %v code %d patch %s", want.allowed, want.changed, code, res.Patch)
}

func compileMutating(w *world) *evaluator.Snapshot {
	return evaluator.Compile(evaluator.Objects{MutatingPolicies: w.mutatingPolicies, MutatingBindings: w.mutatingBindings, Params: w.params},
		evaluator.CompileOptions{ParamScope: paramScope})
}

func compareMutation(t *testing.T, r *request, res *evaluator.Result, want, got mutateOutcome) {
	t.Helper()
	if want.otherErr != "" {
		t.Errorf("plugin returned a non-status error: %s", want.otherErr)
		return
	}
	if got.allowed != want.allowed || !reflect.DeepEqual(got.status, want.status) {
		t.Errorf("allowed %v status %s\nplugin allowed %v status %s\nbindings %+v", got.allowed, js(got.status), want.allowed, js(want.status), res.Bindings)
		return
	}
	if !reflect.DeepEqual(got.final, want.final) {
		t.Errorf("final object\n%s\nplugin's\n%s\npatch %s", mustJSON(got.final), mustJSON(want.final), res.Patch)
	} else if !bytes.Equal(got.encoded, want.encoded) {
		t.Errorf("final object encoded\n%s\nplugin's\n%s\npatch %s", got.encoded, want.encoded, res.Patch)
	}
	if got.changed != want.changed {
		t.Errorf("changed %v, plugin %v; patch %s", got.changed, want.changed, res.Patch)
	}
}
