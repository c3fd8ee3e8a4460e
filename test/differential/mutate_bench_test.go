package differential

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

const mutatingDir = "../../samples/mutating"

// mutatingBaselineWorld is the five sample MutatingAdmissionPolicies in a
// cluster with the "shop" namespace, and the baseline Pod, decoded and
// typed.
func mutatingBaselineWorld(tb testing.TB) (*world, map[string]any, *corev1.Pod) {
	tb.Helper()
	_, obj, pod := baselineWorld(tb)
	w := &world{}
	for _, f := range []string{"policies.yaml", "bindings.yaml"} {
		data, err := os.ReadFile(filepath.Join(mutatingDir, f))
		if err != nil {
			tb.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---\n")) {
			var meta struct{ Kind string }
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				tb.Fatal(err)
			}
			switch meta.Kind {
			case "MutatingAdmissionPolicy":
				p := &admissionregistrationv1.MutatingAdmissionPolicy{}
				if err := yaml.UnmarshalStrict(doc, p); err != nil {
					tb.Fatal(err)
				}
				evaluator.SetMutatingPolicyDefaults(p)
				w.mutatingPolicies = append(w.mutatingPolicies, p)
			case "MutatingAdmissionPolicyBinding":
				b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
				if err := yaml.UnmarshalStrict(doc, b); err != nil {
					tb.Fatal(err)
				}
				evaluator.SetMutatingBindingDefaults(b)
				w.mutatingBindings = append(w.mutatingBindings, b)
			}
		}
	}
	if len(w.mutatingPolicies) != 5 || len(w.mutatingBindings) != 5 {
		tb.Fatalf("%d policies and %d bindings, want 5 of each", len(w.mutatingPolicies), len(w.mutatingBindings))
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"kubernetes.io/metadata.name": "shop"}}}
	w.namespaces = []*corev1.Namespace{ns}
	w.inventory = evaluator.NamespaceMap{"shop": ns}
	return w, obj, pod
}

func baselineMutateRequest(obj map[string]any) *request {
	er := baselineEvalRequest(obj)
	er.RequestKind, er.RequestResource = er.Kind, er.Resource
	return &request{evalReq: er, options: &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{Kind: "CreateOptions", APIVersion: "meta.k8s.io/v1"}},
		userInfo: &user.DefaultInfo{Name: er.UserInfo.Username, Groups: er.UserInfo.Groups}, namespace: "shop"}
}

// TestMutateBaselineAgrees checks that both engines make the same Pod of
// the baseline one with the sample policies, and that they change it.
func TestMutateBaselineAgrees(t *testing.T) {
	w, obj, _ := mutatingBaselineWorld(t)
	p := newMutatingPlugin(t, w)
	defer p.close()
	snap := compileMutating(w)
	r := baselineMutateRequest(obj)
	want := p.mutate(t, r)
	res := snap.Evaluate(context.Background(), evaluator.Mutating, r.evalReq, evaluator.WithNamespaces(w.inventory))
	compareMutation(t, r, res, want, evaluatorMutation(t, r, res))
	if !want.changed || res.Patch == nil {
		t.Fatalf("the sample policies left the pod unchanged: %+v", res.Bindings)
	}
	t.Logf("patch %s", res.Patch)
}

// BenchmarkMutatePlugin is the apiserver's own plugin with the five sample
// policies on the baseline Pod, typed as kube-apiserver holds it, with
// the admission chain's reinvocation. Each iteration copies the Pod (the
// plugin writes its result into the attributes' object), which the
// apiserver would have decoded afresh.
func BenchmarkMutatePlugin(b *testing.B) {
	w, obj, pod := mutatingBaselineWorld(b)
	p := newMutatingPlugin(b, w)
	defer p.close()
	if out := p.mutate(b, baselineMutateRequest(obj)); !out.allowed || !out.changed {
		b.Fatalf("plugin: allowed %v changed %v %+v", out.allowed, out.changed, out.status)
	}
	r := baselineMutateRequest(obj)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		attrs := admission.NewAttributesRecord(pod.DeepCopy(), nil, podGVK, "shop", "api-7d9f8c6b5-x2k9q", podGVR, "", admission.Create, r.options, false, r.userInfo)
		if err := p.plugin.Admit(ctx, attrs, mutateInterfaces); err != nil {
			b.Fatal(err)
		}
		if rc := attrs.GetReinvocationContext(); rc.ShouldReinvoke() {
			rc.SetIsReinvoke()
			if err := p.plugin.Admit(ctx, attrs, mutateInterfaces); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkMutateEvaluator is Snapshot.Mutate on the same Pod, decoded,
// up to the JSON patch.
func BenchmarkMutateEvaluator(b *testing.B) {
	w, obj, _ := mutatingBaselineWorld(b)
	snap := compileMutating(w)
	req := baselineMutateRequest(obj).evalReq
	ctx := context.Background()
	if res := snap.Evaluate(ctx, evaluator.Mutating, req, evaluator.WithNamespaces(w.inventory)); !res.Allowed || res.Patch == nil {
		b.Fatalf("evaluator: %+v %s", res.Status, res.Patch)
	}
	b.ReportAllocs()
	for b.Loop() {
		snap.Evaluate(ctx, evaluator.Mutating, req, evaluator.WithNamespaces(w.inventory))
	}
}
