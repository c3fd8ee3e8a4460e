package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// meshNamespace is where the sidecar webhook injects.
const meshNamespace = "mesh"

// sidecar is what the injector adds: a container that meets the baseline
// and has no ephemeral-storage limit, which the gateway's
// ephemeral-storage-limit policy adds only if it is called again.
func sidecar() corev1.Container {
	no, yes := false, true
	return corev1.Container{
		Name: "mesh-proxy", Image: "registry.example.com/mesh/proxy:v1.2.3",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
		SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
			RunAsNonRoot: &yes, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
	}
}

// startSidecarInjector serves a mutating webhook that adds the sidecar to
// Pods that lack it, as a service mesh does, and returns its URL and the
// CA of its certificate.
func startSidecarInjector(t *testing.T) (string, []byte) {
	t.Helper()
	p := newPKI(t, t.TempDir())
	cert, err := tls.LoadX509KeyPair(p.servingCert, p.servingKey)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(injectSidecar), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "https://127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) + "/inject", p.caPEM
}

func injectSidecar(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	var pod corev1.Pod
	if err := json.Unmarshal(review.Request.Object.Raw, &pod); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	missing := true
	for _, c := range pod.Spec.Containers {
		missing = missing && c.Name != sidecar().Name
	}
	if missing {
		patch, _ := json.Marshal([]map[string]any{{"op": "add", "path": "/spec/containers/-", "value": sidecar()}})
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = patch, &pt
	}
	review.Response, review.Request = resp, nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// checkReinvocation installs the sidecar injector as a second mutating
// webhook, which the apiserver calls after the gateway's (configurations
// run in name order), and checks what docs/webhook.md says of a re-call:
// since the injector changed the Pod, the apiserver calls the gateway
// again (reinvocationPolicy IfNeeded), whose policies then give the
// sidecar the tenant's defaults; the idempotent mutations change nothing
// more.
func checkReinvocation(t *testing.T, g *gateway, cs kubernetes.Interface, cluster string, allowed *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	url, ca := startSidecarInjector(t)
	never := admissionregistrationv1.NeverReinvocationPolicy
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	timeout := int32(5)
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "zz-mesh-sidecar"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         "sidecar.mesh.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": meshNamespace}},
			FailurePolicy:     &fail, SideEffects: &none, TimeoutSeconds: &timeout,
			AdmissionReviewVersions: []string{"v1"}, ReinvocationPolicy: &never,
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: meshNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(meshNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
		Name: "api"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := allowed.DeepCopy()
	pod.Namespace = meshNamespace
	pods := cs.CoreV1().Pods(meshNamespace)
	eventually(t, time.Minute, "the apiserver to call the sidecar injector", func() bool {
		p, err := pods.Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && len(p.Spec.Containers) == len(pod.Spec.Containers)+1
	})
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s in %s: %v", pod.Name, meshNamespace, err)
	}
	n := len(created.Spec.Containers)
	if n != len(pod.Spec.Containers)+1 || created.Spec.Containers[n-1].Name != sidecar().Name {
		t.Fatalf("containers %d, want the %d sent and the sidecar", n, len(pod.Spec.Containers))
	}
	side := created.Spec.Containers[n-1]
	if q, ok := side.Resources.Limits[corev1.ResourceEphemeralStorage]; !ok || q.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("the sidecar's limits are %v: the gateway was not called again after the injector", side.Resources.Limits)
	}
	// The rest is what one call gives: the idempotent mutations did not
	// apply twice (one spot toleration, one team label).
	sent := pod.DeepCopy()
	created.Spec.Containers = created.Spec.Containers[:n-1]
	checkMutations(t, "the Pod with a sidecar", sent, created)

	var mutates []decision
	eventually(t, 30*time.Second, "the two calls of the gateway's mutating webhook to be recorded", func() bool {
		mutates = mutates[:0]
		for _, d := range decisionsOf(t, g, cluster, meshNamespace, "--kind", "Pod") {
			if !d.DryRun && d.Endpoint == "mutate" {
				mutates = append(mutates, d)
			}
		}
		return len(mutates) >= 2
	})
	if len(mutates) != 2 {
		t.Errorf("%d calls of /mutate for the Pod, want 2: %+v", len(mutates), mutates)
	}
}
