package differential

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

const baselineDir = "../../samples/baseline"

// baselineWorld is the baseline policy set in a cluster with the "shop"
// namespace, and the realistic Pod both decoded (for the evaluator) and
// typed (as the apiserver hands it to its plugin).
func baselineWorld(tb testing.TB) (*world, map[string]any, *corev1.Pod) {
	tb.Helper()
	w := &world{}
	for _, f := range []string{"policies.yaml", "bindings.yaml"} {
		data, err := os.ReadFile(filepath.Join(baselineDir, f))
		if err != nil {
			tb.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---\n")) {
			var meta struct{ Kind string }
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				tb.Fatal(err)
			}
			switch meta.Kind {
			case "ValidatingAdmissionPolicy":
				p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
				if err := yaml.UnmarshalStrict(doc, p); err != nil {
					tb.Fatal(err)
				}
				evaluator.SetPolicyDefaults(p)
				w.policies = append(w.policies, p)
			case "ValidatingAdmissionPolicyBinding":
				b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
				if err := yaml.UnmarshalStrict(doc, b); err != nil {
					tb.Fatal(err)
				}
				evaluator.SetBindingDefaults(b)
				w.bindings = append(w.bindings, b)
			}
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"kubernetes.io/metadata.name": "shop"}}}
	w.namespaces = []*corev1.Namespace{ns}
	w.inventory = evaluator.NamespaceMap{"shop": ns}
	data, err := os.ReadFile(filepath.Join(baselineDir, "pod.json"))
	if err != nil {
		tb.Fatal(err)
	}
	obj, err := evaluator.DecodeObject(data)
	if err != nil {
		tb.Fatal(err)
	}
	pod := &corev1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, pod); err != nil {
		tb.Fatal(err)
	}
	return w, obj, pod
}

func baselineEvalRequest(obj map[string]any) *evaluator.Request {
	return &evaluator.Request{
		Kind: podGVK, Resource: podGVR, Name: "api-7d9f8c6b5-x2k9q", Namespace: "shop", Operation: "CREATE",
		UserInfo: authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:replicaset-controller",
			Groups: []string{"system:serviceaccounts", "system:authenticated"}},
		Object:  obj,
		Options: runtime.RawExtension{Raw: []byte(`{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1"}`)},
	}
}

// TestBaselineAgrees checks that both engines allow the realistic Pod and
// deny the same broken one with the same status, typed or unstructured.
func TestBaselineAgrees(t *testing.T) {
	w, obj, pod := baselineWorld(t)
	p := newAPIServerPlugin(t, w)
	defer p.close()
	snap := compile(w)
	bad := pod.DeepCopy()
	bad.Spec.HostNetwork = true
	bad.Spec.Containers[1].Image = "docker.io/library/redis:latest"
	badObj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(bad)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		typed *corev1.Pod
		obj   map[string]any
	}{{"compliant", pod, obj}, {"violating", bad, badObj}} {
		t.Run(tc.name, func(t *testing.T) {
			res := snap.Evaluate(context.Background(), evaluator.Validating, baselineEvalRequest(tc.obj), evaluator.WithNamespaces(w.inventory))
			got := evaluatorOutcome(res)
			want := p.validateTyped(tc.typed)
			r := &request{evalReq: baselineEvalRequest(tc.obj)}
			compareOutcome(t, tc.name, r, w, res, want, got)
			if tc.name == "violating" && got.allowed {
				t.Errorf("violating pod allowed")
			}
		})
	}
}

// validateTyped runs the plugin the way kube-apiserver does for a Pod: a
// typed object, decoded once.
func (a *apiserverPlugin) validateTyped(pod *corev1.Pod) outcome {
	attrs := &recordingAttributes{
		Attributes: admission.NewAttributesRecord(pod, nil, podGVK, "shop", "api-7d9f8c6b5-x2k9q", podGVR, "",
			admission.Create, &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{Kind: "CreateOptions", APIVersion: "meta.k8s.io/v1"}}, false,
			&user.DefaultInfo{Name: "system:serviceaccount:kube-system:replicaset-controller", Groups: []string{"system:serviceaccounts", "system:authenticated"}}),
		annotations: map[string]string{},
	}
	rec := &warningRecorder{}
	err := a.plugin.Validate(contextWithWarnings(rec), attrs, objectInterfaces)
	out := outcome{allowed: err == nil, warnings: rec.warnings, annotations: attrs.annotations}
	if err != nil {
		out.status = statusOf(err)
	}
	return out
}

var objectInterfaces = admission.NewObjectInterfacesFromScheme(clientgoscheme.Scheme)

// BenchmarkBaselinePlugin is the apiserver's own plugin on the realistic
// Pod, objects already decoded (typed, as kube-apiserver has them).
func BenchmarkBaselinePlugin(b *testing.B) {
	w, _, pod := baselineWorld(b)
	p := newAPIServerPlugin(b, w)
	defer p.close()
	if out := p.validateTyped(pod); !out.allowed {
		b.Fatalf("plugin denied the baseline pod: %+v", out.status)
	}
	opts := &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{Kind: "CreateOptions", APIVersion: "meta.k8s.io/v1"}}
	ui := &user.DefaultInfo{Name: "system:serviceaccount:kube-system:replicaset-controller", Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		attrs := admission.NewAttributesRecord(pod, nil, podGVK, "shop", "api-7d9f8c6b5-x2k9q", podGVR, "", admission.Create, opts, false, ui)
		if err := p.plugin.Validate(ctx, attrs, objectInterfaces); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineEvaluator is the evaluator on the same Pod, decoded.
func BenchmarkBaselineEvaluator(b *testing.B) {
	w, obj, _ := baselineWorld(b)
	snap := compile(w)
	req := baselineEvalRequest(obj)
	ctx := context.Background()
	if res := snap.Evaluate(ctx, evaluator.Validating, req, evaluator.WithNamespaces(w.inventory)); !res.Allowed {
		b.Fatalf("evaluator denied the baseline pod: %+v", res.Status)
	}
	b.ReportAllocs()
	for b.Loop() {
		snap.Evaluate(ctx, evaluator.Validating, req, evaluator.WithNamespaces(w.inventory))
	}
}
