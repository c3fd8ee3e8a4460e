package differential

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

const (
	diffSeed      = 20260611
	diffWorlds    = 30
	casesPerWorld = 20
)

func paramScope(gvk schema.GroupVersionKind) (bool, bool) {
	switch gvk {
	case limitsGVK, configMapGVK:
		return true, true
	case clusterLimitsGVK:
		return false, true
	}
	return false, false
}

func compile(w *world) *evaluator.Snapshot {
	return evaluator.Compile(evaluator.Objects{Policies: w.policies, Bindings: w.bindings, Params: w.params},
		evaluator.CompileOptions{ParamScope: paramScope})
}

type diffStats struct {
	cases, exact, unknownNamespace, denied, multiDenied, allowed, warned, annotated, errors int
}

// TestDifferential evaluates seeded, generated cases with the apiserver's
// own ValidatingAdmissionPolicy plugin and with the evaluator. Any
// difference in verdict, code, reason, message, details, warnings or audit
// annotations fails.
func TestDifferential(t *testing.T) {
	g := gen{rand.New(rand.NewPCG(diffSeed, diffSeed^0x5eed))}
	var st diffStats
	for wi := range diffWorlds {
		w := g.world(wi)
		var reqs []*request
		for range casesPerWorld {
			reqs = append(reqs, g.request(w))
		}
		runWorld(t, fmt.Sprintf("world%d", wi), w, reqs, &st)
	}
	// Exhausting the 1e7 budget is slow, so it gets a small world of its own.
	bg := gen{rand.New(rand.NewPCG(1, 2))}
	bw := budgetWorld()
	var breqs []*request
	for len(breqs) < 1 {
		r := bg.request(bw)
		if r.evalReq.Operation == "CREATE" && r.evalReq.RequestResource == podGVR {
			breqs = append(breqs, r)
		}
	}
	runWorld(t, "budget", bw, breqs, &st)

	t.Logf("%+v", st)
	if st.cases < 500 {
		t.Errorf("only %d cases", st.cases)
	}
	// The generator must keep exercising every kind of outcome.
	for name, n := range map[string]int{"exact": st.exact, "denied": st.denied, "multiDenied": st.multiDenied,
		"allowed": st.allowed, "warned": st.warned, "annotated": st.annotated, "errors": st.errors, "unknownNamespace": st.unknownNamespace} {
		if n < 10 {
			t.Errorf("too few %s cases: %d", name, n)
		}
	}
	if st.exact < 450 {
		t.Errorf("only %d cases compared exactly", st.exact)
	}
}

func runWorld(t *testing.T, name string, w *world, reqs []*request, st *diffStats) {
	t.Helper()
	// The apiserver defaults objects when they are written; both engines
	// see the stored, defaulted form.
	for _, p := range w.policies {
		evaluator.SetPolicyDefaults(p)
	}
	for _, b := range w.bindings {
		evaluator.SetBindingDefaults(b)
	}
	p := newAPIServerPlugin(t, w)
	defer p.close()
	snap := compile(w)
	for i, r := range reqs {
		st.cases++
		caseName := fmt.Sprintf("%s/case%d", name, i)
		want := p.validate(r)
		res := snap.Evaluate(context.Background(), evaluator.Validating, r.evalReq, evaluator.WithNamespaces(w.inventory))
		got := evaluatorOutcome(res)
		if want.otherErr != "" {
			t.Errorf("%s: plugin returned a non-status error: %s", caseName, want.otherErr)
			continue
		}
		for _, b := range res.Bindings {
			if b.FailurePolicyApplied {
				st.errors++
				break
			}
		}
		if res.UnknownNamespace != "" {
			// The cluster knows this namespace, the inventory does not: a
			// binding that needs its labels or object must be decided by its
			// failurePolicy with a message that says so.
			st.unknownNamespace++
			if res.UnknownNamespace != r.namespace {
				t.Errorf("%s: unknownNamespace = %q, want %q", caseName, res.UnknownNamespace, r.namespace)
			}
			found := false
			for _, b := range res.Bindings {
				if b.FailurePolicyApplied && strings.Contains(b.Error, "namespace inventory lacks it") {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: unknown namespace without a binding error: %+v", caseName, res.Bindings)
			}
			continue
		}
		st.exact++
		compareOutcome(t, caseName, r, w, res, want, got)
		switch {
		case !got.allowed:
			st.denied++
			if len(res.Denials) > 1 {
				st.multiDenied++
			}
		default:
			st.allowed++
		}
		if len(got.warnings) > 0 {
			st.warned++
		}
		if len(got.annotations) > 0 {
			st.annotated++
		}
	}
}

func compareOutcome(t *testing.T, caseName string, r *request, w *world, res *evaluator.Result, want, got outcome) {
	t.Helper()
	fail := func(format string, args ...any) {
		failures++
		if failures > 8 {
			t.Errorf("%s: %s", caseName, fmt.Sprintf(format, args...))
			return
		}
		t.Errorf("%s: %s\nrequest: %s\nworld: %s", caseName, fmt.Sprintf(format, args...), describeRequest(r), describeWorld(w))
	}
	if got.allowed != want.allowed {
		fail("allowed = %v, plugin %v\n got status %+v\nplugin status %+v", got.allowed, want.allowed, got.status, want.status)
		return
	}
	if !want.allowed {
		// The plugin walks policies and bindings in informer map order, so
		// with several denials any of them may come first.
		matched := false
		for _, d := range res.Denials {
			if reflect.DeepEqual(evaluator.DenialStatus(r.evalReq, d), want.status) {
				matched = true
				break
			}
		}
		if !matched {
			fail("status differs:\n got %s\nplugin %s\ndenials %+v", js(got.status), js(want.status), res.Denials)
		}
		if len(res.Denials) == 1 && !reflect.DeepEqual(got.status, want.status) {
			fail("status differs:\n got %s\nplugin %s", js(got.status), js(want.status))
		}
	}
	if !reflect.DeepEqual(sorted(got.warnings), sorted(want.warnings)) {
		fail("warnings differ:\n got %q\nplugin %q", got.warnings, want.warnings)
	}
	if len(got.annotations) != len(want.annotations) {
		fail("annotations differ:\n got %q\nplugin %q", got.annotations, want.annotations)
		return
	}
	for k, wv := range want.annotations {
		gv, ok := got.annotations[k]
		if !ok {
			fail("annotation %q missing; plugin %q", k, wv)
			continue
		}
		if k == "validation.policy.admission.k8s.io/validation_failure" {
			var gf, wf []validating.ValidationFailureValue
			if err := json.Unmarshal([]byte(gv), &gf); err != nil {
				fail("bad annotation %q: %v", gv, err)
			}
			if err := json.Unmarshal([]byte(wv), &wf); err != nil {
				fail("bad plugin annotation %q: %v", wv, err)
			}
			key := func(v validating.ValidationFailureValue) string {
				return fmt.Sprintf("%s/%s/%d/%s/%v", v.Policy, v.Binding, v.ExpressionIndex, v.Message, v.ValidationActions)
			}
			if !reflect.DeepEqual(sortedBy(gf, key), sortedBy(wf, key)) {
				fail("validation_failure differs:\n got %s\nplugin %s", gv, wv)
			}
			if len(gf) == 1 && gv != wv {
				fail("validation_failure bytes differ:\n got %s\nplugin %s", gv, wv)
			}
			continue
		}
		// Values of several bindings are joined in binding order, which the
		// plugin takes from an informer map.
		if !reflect.DeepEqual(sorted(strings.Split(gv, ", ")), sorted(strings.Split(wv, ", "))) {
			fail("annotation %q differs:\n got %q\nplugin %q", k, gv, wv)
		}
	}
}

var failures int

func sorted(xs []string) []string {
	c := slices.Clone(xs)
	slices.Sort(c)
	return c
}

func sortedBy[T any](xs []T, key func(T) string) []string {
	var ks []string
	for _, x := range xs {
		ks = append(ks, key(x))
	}
	slices.Sort(ks)
	return ks
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func describeRequest(r *request) string {
	er := *r.evalReq
	return js(er)
}

func describeWorld(w *world) string {
	var b strings.Builder
	for _, p := range w.policies {
		s := js(p.Spec)
		if len(s) > 1500 {
			s = s[:1500] + "..."
		}
		b.WriteString("\n  policy " + p.Name + " " + s)
	}
	for _, bd := range w.bindings {
		b.WriteString("\n  binding " + bd.Name + " " + js(bd.Spec))
	}
	return b.String()
}

var _ = unstructured.Unstructured{}
