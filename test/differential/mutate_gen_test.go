package differential

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

const (
	mutateSeed   = 20261126
	mutateWorlds = 40
	mutateCasesN = 20
)

// mutationPool is the generator's mutations: merges and JSON patches that
// apply to some kinds and fail on others, with and without params.
func mutationPool(pc paramChoice) []admissionregistrationv1.Mutation {
	acs := []string{
		`Object{metadata: Object.metadata{labels: {"team": "a"}}}`,
		`Object{metadata: Object.metadata{annotations: {"n": string(size(object.metadata.?labels.orValue({})))}}}`,
		`Object{metadata: Object.metadata{labels: {"user": request.userInfo.username, "op": request.operation}}}`,
		`Object{metadata: Object.metadata{labels: {"ns": namespaceObject.metadata.name}}}`,
		`Object{metadata: Object.metadata{labels: {"user": variables.user}}}`,
		`Object{spec: Object.spec{containers: object.spec.containers.map(c, Object.spec.containers{name: c.name, imagePullPolicy: "IfNotPresent"})}}`,
		`Object{spec: Object.spec{securityContext: Object.spec.securityContext{seccompProfile: Object.spec.securityContext.seccompProfile{type: "RuntimeDefault"}}}}`,
		`Object{spec: Object.spec{tolerations: [Object.spec.tolerations{key: "k", operator: "Exists"}]}}`,
		`Object{spec: Object.spec{containers: [Object.spec.containers{name: "sidecar", image: "proxy:1"}]}}`,
		`Object{spec: Object.spec{containers: [Object.spec.containers{name: "c0", args: ["-x"]}]}}`,
		`Object{spec: Object.spec{replicas: 3}}`,
		`Object{data: {"added": "1"}}`,
		`Object{spec: Object.spec{hostNetwork: false}}`,
		`Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: "c0", image: "pinned:1"}]}}}}`,
	}
	jps := []string{
		`[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("example.com/x~y"), value: "y"}]`,
		`[JSONPatch{op: "add", path: "/metadata/annotations", value: {"a": "b"}}]`,
		`[JSONPatch{op: "replace", path: "/metadata/labels/app", value: "api"}]`,
		`[JSONPatch{op: "remove", path: "/metadata/labels/app"}]`,
		`[JSONPatch{op: "test", path: "/metadata/name", value: "web"}, JSONPatch{op: "add", path: "/metadata/annotations", value: {"web": "yes"}}]`,
		`[JSONPatch{op: "copy", from: "/metadata/name", path: "/metadata/annotations"}]`,
		`[JSONPatch{op: "add", path: "/spec/containers/-", value: Object.spec.containers{name: "extra" + string(size(object.spec.containers)), image: "x"}}]`,
		`[JSONPatch{op: "add", path: "/spec/containers/0", value: Object.spec.containers{name: "first", image: "x"}}]`,
		`[JSONPatch{op: "move", from: "/spec/containers/0/image", path: "/spec/containers/0/workingDir"}]`,
		`[JSONPatch{op: "add", path: "/spec/bogus", value: 1}]`,
		`[JSONPatch{op: "replace", path: "/spec/containers/0/name", value: 7}]`,
		`[JSONPatch{op: "add", path: "/metadata/labels", value: {"fresh": "1"}}, JSONPatch{op: "move", from: "/metadata/labels/fresh", path: "/metadata/labels/moved"}]`,
	}
	switch pc {
	case configMapParams:
		acs = append(acs, `Object{metadata: Object.metadata{labels: {"registry": params.data.?registry.orValue("none")}}}`)
		jps = append(jps, `[JSONPatch{op: "add", path: "/metadata/annotations", value: {"max": params.data.maxContainers}}]`)
	case limitsParams, clusterLimitsParams:
		acs = append(acs, `Object{metadata: Object.metadata{labels: {"max": string(params.spec.maxNameLength)}}}`)
	}
	var out []admissionregistrationv1.Mutation
	for _, e := range acs {
		out = append(out, admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: e}})
	}
	for _, e := range jps {
		out = append(out, admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
			JSONPatch: &admissionregistrationv1.JSONPatch{Expression: e}})
	}
	return out
}

// safeMutations are mutations that apply to pods.
func safeMutations(pc paramChoice) []admissionregistrationv1.Mutation {
	pool := mutationPool(pc)
	var out []admissionregistrationv1.Mutation
	for _, i := range []int{0, 1, 2, 5, 6, 8, 12, 14, 15, 16, 18, 20, 21, 25} {
		out = append(out, pool[i])
	}
	return out
}

// mutateRequest is mostly a pod created or updated in a known namespace.
func (g gen) mutateRequest(w *world) *request {
	for {
		r := g.request(w)
		er := r.evalReq
		if g.chance(0.5) || er.RequestResource == podGVR && er.RequestSubResource == "" && er.Operation != "DELETE" && er.Namespace != "legacy" {
			return r
		}
	}
}

// mutatingWorld is a generated cluster of MutatingAdmissionPolicies.
func (g gen) mutatingWorld(id int) *world {
	w := &world{params: worldParams()}
	w.namespaces, w.inventory = worldNamespaces()
	for i := range 1 + g.pick(4) {
		pc := paramChoice(g.pick(4))
		p := &admissionregistrationv1.MutatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%d-policy-%d", id, i)},
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				MatchConstraints:   g.matchResources(true),
				Variables:          g.variables(),
				MatchConditions:    g.matchConditions(),
				ReinvocationPolicy: pickOne(g, []admissionregistrationv1.ReinvocationPolicyType{admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.IfNeededReinvocationPolicy}),
			},
		}
		pool, safe := mutationPool(pc), safeMutations(pc)
		for range 1 + g.pick(2) {
			if g.chance(0.7) {
				p.Spec.Mutations = append(p.Spec.Mutations, pickOne(g, safe))
			} else {
				p.Spec.Mutations = append(p.Spec.Mutations, pickOne(g, pool))
			}
		}
		if g.chance(0.6) {
			// Most policies in a cluster are about pods and match them
			// plainly.
			p.Spec.MatchConstraints = &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
				nrule([]string{"CREATE", "UPDATE"}, []string{""}, []string{"v1"}, []string{"pods"})}}
		}
		if g.chance(0.5) {
			p.Spec.MatchConditions = nil
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
		w.mutatingPolicies = append(w.mutatingPolicies, p)
		for j := range 1 + g.pick(2) {
			b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%d-binding-%d-%d", id, i, j)},
				Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: p.Name, ParamRef: g.paramRef(pc)},
			}
			if g.chance(0.2) {
				b.Spec.MatchResources = g.matchResources(false)
			}
			if b.Spec.ParamRef != nil && g.chance(0.5) {
				b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "limits", ParameterNotFoundAction: ptr(admissionregistrationv1.AllowAction)}
			}
			w.mutatingBindings = append(w.mutatingBindings, b)
		}
	}
	return w
}

// TestMutateGenerated holds Mutate to the plugin on seeded, generated
// worlds and requests, as TestMutateDifferential does on hand-written
// ones.
func TestMutateGenerated(t *testing.T) {
	g := gen{rand.New(rand.NewPCG(mutateSeed, mutateSeed^0x5eed))}
	var st struct{ cases, compared, unknownNamespace, changed, denied, reinvoked, errors, ignored int }
	fast0, declined0 := evaluator.FastMutationCounts()
	for wi := range mutateWorlds {
		w := g.mutatingWorld(wi)
		for _, p := range w.mutatingPolicies {
			evaluator.SetMutatingPolicyDefaults(p)
		}
		for _, b := range w.mutatingBindings {
			evaluator.SetMutatingBindingDefaults(b)
		}
		p := newMutatingPlugin(t, w)
		snap := compileMutating(w)
		for ci := range mutateCasesN {
			r := g.mutateRequest(w)
			st.cases++
			sent := runtime.DeepCopyJSON(r.evalReq.Object)
			res := snap.Evaluate(context.Background(), evaluator.Mutating, r.evalReq, evaluator.WithNamespaces(w.inventory))
			if r.evalReq.Object != nil && !reflect.DeepEqual(sent, r.evalReq.Object) {
				t.Errorf("world %d case %d: Mutate modified the request's object", wi, ci)
			}
			if res.UnknownNamespace != "" {
				// The cluster knows the namespace, the inventory does not:
				// the failurePolicy decides instead (see TestDifferential).
				st.unknownNamespace++
				continue
			}
			st.compared++
			t.Run(fmt.Sprintf("world%d/case%d", wi, ci), func(t *testing.T) {
				want := p.mutate(t, r)
				got := evaluatorMutation(t, r, res)
				compareMutation(t, r, res, want, got)
				if t.Failed() {
					t.Logf("request %s\npolicies %s\nbindings %s", js(r.evalReq), js(w.mutatingPolicies), js(w.mutatingBindings))
				}
			})
			if res.Patch != nil {
				st.changed++
			}
			if !res.Allowed {
				st.denied++
			}
			for _, b := range res.Bindings {
				if b.Reinvoked {
					st.reinvoked++
					break
				}
			}
			for _, b := range res.Bindings {
				if b.FailurePolicyApplied {
					st.errors++
					if !b.Denied {
						st.ignored++
					}
					break
				}
			}
		}
		p.close()
	}
	t.Logf("%+v", st)
	fast, declined := evaluator.FastMutationCounts()
	t.Logf("fast path: %d answered, %d declined", fast-fast0, declined-declined0)
	for name, n := range map[string]int{"compared": st.compared / 10, "changed": st.changed, "denied": st.denied,
		"reinvoked": st.reinvoked, "errors": st.errors, "ignored": st.ignored} {
		if n < 10 {
			t.Errorf("too few %s cases: %d", name, n)
		}
	}
}

// FuzzMutate compares the evaluator with the plugin on a world and
// request generated from the fuzzer's seeds (random merges and JSON
// patches over random objects). Each input builds a plugin, so it runs at
// a few inputs a second: go test -fuzz FuzzMutate -run '^$'.
func FuzzMutate(f *testing.F) {
	for i := range uint64(4) {
		f.Add(i, i*7919)
	}
	f.Fuzz(func(t *testing.T, a, b uint64) {
		g := gen{rand.New(rand.NewPCG(a, b))}
		w := g.mutatingWorld(0)
		for _, p := range w.mutatingPolicies {
			evaluator.SetMutatingPolicyDefaults(p)
		}
		for _, b := range w.mutatingBindings {
			evaluator.SetMutatingBindingDefaults(b)
		}
		p := newMutatingPlugin(t, w)
		defer p.close()
		snap := compileMutating(w)
		r := g.mutateRequest(w)
		res := snap.Evaluate(context.Background(), evaluator.Mutating, r.evalReq, evaluator.WithNamespaces(w.inventory))
		if res.UnknownNamespace != "" {
			return
		}
		compareMutation(t, r, res, p.mutate(t, r), evaluatorMutation(t, r, res))
	})
}
