package differential

import (
	"fmt"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// normCase is a differential case and the evaluator path it must take:
// "fast" the fast mutation path, "exact" the exact one after the fast
// path declined, "" either.
type normCase struct {
	name string
	w    *world
	r    *request
	path string
}

// TestMutateNormalizations holds the evaluator to the plugin where the
// typed round trip changes what a mutation wrote, and checks which path
// answered.
func TestMutateNormalizations(t *testing.T) {
	for _, tc := range normalizationCases() {
		t.Run(tc.name, func(t *testing.T) {
			fast0, declined0 := evaluator.FastMutationCounts()
			runMutateCase(t, tc.w, tc.r)
			fast, declined := evaluator.FastMutationCounts()
			switch {
			case tc.path == "fast" && fast == fast0:
				t.Errorf("not answered by the fast path (%d declines)", declined-declined0)
			case tc.path == "exact" && declined == declined0:
				t.Errorf("the fast path did not decline (%d answered)", fast-fast0)
			}
		})
	}
}

// normalizationCases are the effects of the plugin's typed round trip on
// a built-in kind's object, which the evaluator's fast mutation path
// reproduces on the JSON form, and the cases where it must leave the
// answer to the exact path.
func normalizationCases() []normCase {
	container := func(fields string) string {
		return fmt.Sprintf(`Object{spec: Object.spec{containers: [Object.spec.containers{name: "app", %s}]}}`, fields)
	}
	podWith := func(edit func(spec map[string]any)) *request {
		p := webPod()
		edit(p["spec"].(map[string]any))
		return podCreate(p)
	}
	return []normCase{
		{"apply omitempty zero values", mworld(mpol("p", ac(container(`imagePullPolicy: "", stdin: false, workingDir: ""`)))), podCreate(webPod()), "fast"},
		{"apply zero pointer kept", mworld(mpol("p", ac(`Object{spec: Object.spec{priority: 0, enableServiceLinks: false}}`))), podCreate(webPod()), "fast"},
		{"apply quantities", mworld(mpol("p", ac(container(`resources: Object.spec.containers.resources{limits: {"cpu": "0.5", "memory": "1000m"}, requests: {"cpu": "1000m"}}`)))), podCreate(webPod()), "fast"},
		{"apply quantity merged into a sent one", mworld(mpol("p", ac(`Object{spec: Object.spec{containers: [Object.spec.containers{name: "side", resources: Object.spec.containers.resources{limits: {"memory": "0.5Gi"}}}]}}`))), podCreate(webPod()), "fast"},
		{"apply null label map", mworld(mpol("p", ac(`Object{metadata: Object.metadata{labels: null}}`))), podCreate(webPod()), ""},
		{"apply null scalar", mworld(mpol("p", ac(container(`image: null`)))), podCreate(webPod()), ""},
		{"apply duplicate keys in the configuration", mworld(mpol("p", ac(`Object{spec: Object.spec{containers: [Object.spec.containers{name: "app", image: "a"}, Object.spec.containers{name: "app", image: "b"}]}}`))), podCreate(webPod()), "exact"},
		{"apply over duplicate keys in the object", mworld(mpol("p", ac(container(`image: "x"`)))), podWith(func(spec map[string]any) {
			spec["containers"] = append(spec["containers"].([]any), map[string]any{"name": "app", "image": "dup"})
		}), ""},
		{"apply new keyed item gets its zero fields", mworld(mpol("p", ac(`Object{spec: Object.spec{containers: [Object.spec.containers{name: "added", image: "a", ports: [Object.spec.containers.ports{containerPort: 80}]}]}}`))), podCreate(webPod()), "fast"},
		{"apply to an object whose keyed item lacks its key", mworld(mpol("p", ac(`Object{metadata: Object.metadata{labels: {"x": "1"}}}`))), podWith(func(spec map[string]any) {
			spec["imagePullSecrets"] = []any{map[string]any{}}
		}), "exact"},
		{"apply after a non-canonical request", mworld(mpol("p", ac(container(`image: "x"`)))), podWith(func(spec map[string]any) {
			spec["terminationGracePeriodSeconds"] = 30.0
			spec["containers"].([]any)[1].(map[string]any)["resources"] = map[string]any{"limits": map[string]any{"cpu": "1000m"}}
		}), "fast"},
		{"apply with an unknown field in the request", mworld(mpol("p", ac(container(`image: "x"`)))), podWith(func(spec map[string]any) {
			spec["bogus"] = "x"
		}), "exact"},
		{"apply int or string", mworld(mpol("p", ac(container(`livenessProbe: Object.spec.containers.livenessProbe{httpGet: Object.spec.containers.livenessProbe.httpGet{port: "http"}}`)))), podCreate(webPod()), "fast"},
		{"apply keyed list order", mworld(mpol("p", ac(`Object{spec: Object.spec{containers: [Object.spec.containers{name: "c", image: "c2"}, Object.spec.containers{name: "new", image: "n"}, Object.spec.containers{name: "a", image: "a2"}]}}`))), podWith(func(spec map[string]any) {
			spec["containers"] = []any{map[string]any{"name": "a", "image": "a"}, map[string]any{"name": "b", "image": "b"}, map[string]any{"name": "c", "image": "c"}, map[string]any{"name": "d", "image": "d"}}
		}), "fast"},
		{"apply keyed list order, new first", mworld(mpol("p", ac(`Object{spec: Object.spec{containers: [Object.spec.containers{name: "new", image: "n"}, Object.spec.containers{name: "d", image: "d2"}, Object.spec.containers{name: "b", image: "b2"}]}}`))), podWith(func(spec map[string]any) {
			spec["containers"] = []any{map[string]any{"name": "a", "image": "a"}, map[string]any{"name": "b", "image": "b"}, map[string]any{"name": "c", "image": "c"}, map[string]any{"name": "d", "image": "d"}}
		}), "fast"},
		{"apply list with two keys", mworld(mpol("p", ac(container(`ports: [Object.spec.containers.ports{containerPort: 53, protocol: "UDP", name: "dns-u"}, Object.spec.containers.ports{containerPort: 80, protocol: "TCP", name: "web"}]`)))), podWith(func(spec map[string]any) {
			spec["containers"].([]any)[0].(map[string]any)["ports"] = []any{map[string]any{"containerPort": int64(53), "protocol": "TCP"}, map[string]any{"containerPort": int64(80), "protocol": "TCP"}}
		}), "fast"},
		{"apply list key left to its default", mworld(mpol("p", ac(container(`ports: [Object.spec.containers.ports{containerPort: 80, name: "web"}]`)))), podWith(func(spec map[string]any) {
			spec["containers"].([]any)[0].(map[string]any)["ports"] = []any{map[string]any{"containerPort": int64(80)}}
		}), ""},
		{"json patch omitempty zero value", mworld(mpol("p", jp(`[JSONPatch{op: "add", path: "/spec/containers/0/imagePullPolicy", value: ""}]`))), podCreate(webPod()), "fast"},
		{"json patch quantity", mworld(mpol("p", jp(`[JSONPatch{op: "add", path: "/spec/containers/0/resources", value: {"limits": {"cpu": "1000m", "memory": "0.5Gi"}}}]`))), podCreate(webPod()), "fast"},
		{"json patch quantity as a number", mworld(mpol("p", jp(`[JSONPatch{op: "add", path: "/spec/containers/1/resources/limits/cpu", value: 2}]`))), podCreate(webPod()), "fast"},
		{"json patch double into an int field", mworld(mpol("p", jp(`[JSONPatch{op: "add", path: "/spec/priority", value: 2.0}]`))), podCreate(webPod()), "fast"},
		{"json patch fraction into an int field", mworld(mpol("p", ignore, jp(`[JSONPatch{op: "add", path: "/spec/priority", value: 2.5}]`))), podCreate(webPod()), "exact"},
		{"json patch int32 overflow", mworld(mpol("p", ignore, jp(`[JSONPatch{op: "add", path: "/spec/priority", value: 3000000000}]`))), podCreate(webPod()), "exact"},
		{"json patch time", mworld(mpol("p", jp(`[JSONPatch{op: "add", path: "/spec/activeDeadlineSeconds", value: 5}, JSONPatch{op: "add", path: "/metadata/creationTimestamp", value: "2024-01-02T03:04:05+02:00"}]`))), podCreate(webPod()), "fast"},
		{"json patch null into a struct", mworld(mpol("p", jp(`[JSONPatch{op: "add", path: "/spec/securityContext", value: null}]`))), podCreate(webPod()), "fast"},
		{"json patch replace of a missing key in a list item", mworld(mpol("p", jp(`[JSONPatch{op: "replace", path: "/spec/containers/0/workingDir", value: "/w"}]`))), podCreate(webPod()), "fast"},
		{"json patch insert at an index", mworld(mpol("p", jp(`[JSONPatch{op: "add", path: "/spec/containers/1", value: Object.spec.containers{name: "mid", image: "m"}}, JSONPatch{op: "remove", path: "/spec/containers/0/args/0"}]`))), podCreate(webPod()), "fast"},
		{"json patch negative index", mworld(mpol("p", ignore, jp(`[JSONPatch{op: "add", path: "/spec/containers/-1", value: Object.spec.containers{name: "neg", image: "n"}}]`))), podCreate(webPod()), "exact"},
		{"json patch changes the kind", mworld(mpol("p", ignore, jp(`[JSONPatch{op: "replace", path: "/kind", value: "Service"}]`))), podCreate(webPod()), "exact"},
		{"json patch unknown field in a list item", mworld(mpol("p", jp(`[JSONPatch{op: "add", path: "/spec/containers/0/bogus", value: 1}]`))), podCreate(webPod()), "exact"},
		{"typed view pruned to a selected field", mworld(mpol("p", mcond("t", "has(object.spec.containers) && !has(object.spec.securityContext)"),
			ac(`Object{metadata: Object.metadata{labels: {"n": string(size(object.spec.containers)), "img": object.spec.containers[0].image}}}`))), podCreate(webPod()), "fast"},
		{"typed view type-confused on a pruned path", mworld(mpol("p", ignore, mcond("t", "true"),
			ac(`Object{metadata: Object.metadata{labels: {"x": string(object.metadata.labels == "x")}}}`))), podCreate(webPod()), "fast"},
		{"typed view of an optional selection", mworld(mpol("p", mcond("t", "object.spec.?securityContext.?runAsUser.orValue(0) == 0"),
			ac(`Object{metadata: Object.metadata{labels: {"r": string(object.spec.?priority.orValue(7))}}}`))), podCreate(webPod()), "fast"},
		{"typed view of the whole object", mworld(mpol("p", mcond("t", "object == object"),
			ac(`Object{metadata: Object.metadata{labels: {"k": object.kind}}}`))), podCreate(webPod()), "fast"},
		{"typed view through a variable", mworld(mpol("p", mvar("c", "object.spec.containers"), mcond("t", "size(variables.c) > 0"),
			ac(`Object{metadata: Object.metadata{labels: {"first": variables.c[0].name}}}`))), podCreate(webPod()), "fast"},
		{"no object", mworld(mpol("p", ac(`Object{metadata: Object.metadata{labels: {"x": "1"}}}`))), podCreate(nil), ""},
		{"typed view read after a mutation", mworld(
			mpol("a", ac(container(`image: "x"`))),
			mpol("b", mcond("t", "true"), ac(`Object{metadata: Object.metadata{labels: {"img": object.spec.containers[0].image}}}`))), podCreate(webPod()), "fast"},
	}
}
