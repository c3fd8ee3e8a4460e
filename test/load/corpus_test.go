package load

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// item is one prebuilt AdmissionReview v1 body and the answer the baseline
// policy set must give it. The uid is unique per item, so a response is
// matched to its item by the uid it echoes.
type item struct {
	uid     string
	desc    string
	body    []byte
	allowed bool
}

// namespaces the corpus uses; the benchmark uploads them as the cluster's
// inventory (with the kubernetes.io/metadata.name label the bindings select on).
var corpusNamespaces = []string{"shop", "payments", "kube-system"}

func repoFile(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	podGVK    = metav1.GroupVersionKind{Group: "", Version: "v1", Kind: "Pod"}
	podGVR    = metav1.GroupVersionResource{Group: "", Version: "v1", Resource: "pods"}
	deployGVK = metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	deployGVR = metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	scaleGVK  = metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
)

type corpusBuilder struct {
	t     testing.TB
	items []item
}

func (b *corpusBuilder) add(desc string, allowed bool, req admissionv1.AdmissionRequest) {
	b.t.Helper()
	uid := fmt.Sprintf("load-%03d", len(b.items))
	req.UID = types.UID(uid)
	if req.RequestKind == nil {
		req.RequestKind = &req.Kind
	}
	if req.RequestResource == nil {
		req.RequestResource = &req.Resource
	}
	if req.DryRun == nil {
		req.DryRun = ptr.To(false)
	}
	rev := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  &req,
	}
	body, err := json.Marshal(&rev)
	if err != nil {
		b.t.Fatal(err)
	}
	b.items = append(b.items, item{uid: uid, desc: desc, body: body, allowed: allowed})
}

func raw(t testing.TB, obj any) runtime.RawExtension {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: b}
}

func options(t testing.TB, kind string) runtime.RawExtension {
	return raw(t, map[string]string{"apiVersion": "meta.k8s.io/v1", "kind": kind})
}

var (
	rsController  = authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:replicaset-controller", UID: "5f0c1a2b-0000-4000-8000-000000000001", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}
	deployer      = authenticationv1.UserInfo{Username: "system:serviceaccount:ci:deployer", UID: "5f0c1a2b-0000-4000-8000-000000000002", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ci", "system:authenticated"}}
	gcController  = authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:generic-garbage-collector", UID: "5f0c1a2b-0000-4000-8000-000000000003", Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	hpaController = authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:horizontal-pod-autoscaler", UID: "5f0c1a2b-0000-4000-8000-000000000004", Groups: []string{"system:serviceaccounts", "system:authenticated"}}
)

// buildCorpus makes realistic Pod and Deployment reviews from
// samples/baseline/pod.json: CREATE, UPDATE (with oldObject) and DELETE,
// about a third of them violating the baseline policies. The expected answer
// of each is decided here, by construction, from the policies' text: the
// pod policies match pods on CREATE and UPDATE in every namespace but
// kube-system; for apps/v1 workloads only baseline-max-replicas applies
// (replicas <= 50, including the scale subresource on UPDATE); nothing
// matches DELETE.
func buildCorpus(t testing.TB) []item {
	t.Helper()
	var base corev1.Pod
	if err := json.Unmarshal(repoFile(t, "samples/baseline/pod.json"), &base); err != nil {
		t.Fatal(err)
	}
	pod := func(name, ns string, mutate ...func(*corev1.Pod)) *corev1.Pod {
		p := base.DeepCopy()
		p.Name, p.Namespace = name, ns
		p.UID = types.UID("7a1c0000-0000-4000-8000-" + fmt.Sprintf("%012x", len(name)*7919+len(ns)))
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	b := &corpusBuilder{t: t}
	podCreate := func(desc string, allowed bool, p *corev1.Pod) {
		b.add(desc, allowed, admissionv1.AdmissionRequest{
			Kind: podGVK, Resource: podGVR, Name: p.Name, Namespace: p.Namespace,
			Operation: admissionv1.Create, UserInfo: rsController,
			Object: raw(t, p), Options: options(t, "CreateOptions"),
		})
	}
	podUpdate := func(desc string, allowed bool, old, p *corev1.Pod) {
		b.add(desc, allowed, admissionv1.AdmissionRequest{
			Kind: podGVK, Resource: podGVR, Name: p.Name, Namespace: p.Namespace,
			Operation: admissionv1.Update, UserInfo: deployer,
			Object: raw(t, p), OldObject: raw(t, old), Options: options(t, "UpdateOptions"),
		})
	}
	first := func(f func(*corev1.Container)) func(*corev1.Pod) {
		return func(p *corev1.Pod) { f(&p.Spec.Containers[0]) }
	}

	// Allowed pods: the majority of real traffic.
	for i := range 20 {
		podCreate("pod create, compliant", true, pod(fmt.Sprintf("api-7d9f8c6b5-a%03d", i), corpusNamespaces[i%2]))
	}
	podCreate("pod create, privileged in kube-system (exempt)", true, pod("kube-proxy-x9k2p", "kube-system", first(func(c *corev1.Container) {
		c.SecurityContext.Privileged = ptr.To(true)
	}), func(p *corev1.Pod) { p.Spec.HostNetwork = true }))

	// Violations, one policy each, and one breaking several.
	podCreate("pod create, privileged", false, pod("api-priv", "shop", first(func(c *corev1.Container) {
		c.SecurityContext.Privileged = ptr.To(true)
	})))
	podCreate("pod create, hostNetwork", false, pod("api-hostnet", "shop", func(p *corev1.Pod) { p.Spec.HostNetwork = true }))
	podCreate("pod create, hostPID", false, pod("api-hostpid", "payments", func(p *corev1.Pod) { p.Spec.HostPID = true }))
	podCreate("pod create, :latest image", false, pod("api-latest", "shop", first(func(c *corev1.Container) {
		c.Image = "registry.example.com/shop/api:latest"
	})))
	podCreate("pod create, no team label", false, pod("api-nolabel", "shop", func(p *corev1.Pod) { delete(p.Labels, "team") }))
	podCreate("pod create, unapproved registry", false, pod("api-dockerhub", "payments", first(func(c *corev1.Container) {
		c.Image = "docker.io/library/nginx:1.27.1"
	})))
	podCreate("pod create, no limits", false, pod("api-nolimits", "shop", func(p *corev1.Pod) {
		p.Spec.Containers[len(p.Spec.Containers)-1].Resources.Limits = nil
	}))
	podCreate("pod create, writable root fs", false, pod("api-rwroot", "shop", first(func(c *corev1.Container) {
		c.SecurityContext.ReadOnlyRootFilesystem = ptr.To(false)
	})))
	podCreate("pod create, SYS_ADMIN", false, pod("api-sysadmin", "shop", first(func(c *corev1.Container) {
		c.SecurityContext.Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE", "SYS_ADMIN"}, Drop: []corev1.Capability{"ALL"}}
	})))
	podCreate("pod create, runs as root", false, pod("api-root", "payments", first(func(c *corev1.Container) {
		c.SecurityContext.RunAsNonRoot = ptr.To(false)
	})))
	podCreate("pod create, several violations", false, pod("debug-shell", "shop", func(p *corev1.Pod) {
		p.Spec.HostNetwork = true
		c := &p.Spec.Containers[0]
		c.Image = "busybox:latest"
		c.SecurityContext.Privileged = ptr.To(true)
		c.Resources.Limits = nil
	}))

	// Updates carry the old object.
	old := pod("api-7d9f8c6b5-u001", "shop")
	podUpdate("pod update, new annotation", true, old, pod("api-7d9f8c6b5-u001", "shop", func(p *corev1.Pod) {
		p.Annotations["deployment.kubernetes.io/revision"] = "42"
	}))
	podUpdate("pod update, new label", true, old, pod("api-7d9f8c6b5-u001", "shop", func(p *corev1.Pod) {
		p.Labels["canary"] = "true"
	}))
	podUpdate("pod update, image to :latest", false, old, pod("api-7d9f8c6b5-u001", "shop", first(func(c *corev1.Container) {
		c.Image = "registry.example.com/shop/api:latest"
	})))
	podUpdate("pod update in kube-system, privileged (exempt)", true, pod("coredns-5d78c9869d-abcde", "kube-system"),
		pod("coredns-5d78c9869d-abcde", "kube-system", first(func(c *corev1.Container) { c.SecurityContext.Privileged = ptr.To(true) })))

	// Deletes: nothing matches DELETE; the object is null, oldObject is set.
	for i, ns := range []string{"shop", "payments"} {
		p := pod(fmt.Sprintf("api-7d9f8c6b5-d%03d", i), ns)
		b.add("pod delete", true, admissionv1.AdmissionRequest{
			Kind: podGVK, Resource: podGVR, Name: p.Name, Namespace: p.Namespace,
			Operation: admissionv1.Delete, UserInfo: gcController,
			OldObject: raw(t, p), Options: options(t, "DeleteOptions"),
		})
	}

	// Deployments (apps/v1) with the same pod as template: only
	// baseline-max-replicas matches them; pod policies do not look into
	// templates.
	deploy := func(name, ns string, replicas int32, mutate ...func(*corev1.Pod)) *appsv1.Deployment {
		p := pod(name, ns, mutate...)
		d := &appsv1.Deployment{
			TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("d3e10000-0000-4000-8000-00000000" + fmt.Sprintf("%04x", len(name))),
				Generation: 3, Labels: map[string]string{"app": "api", "team": "checkout"},
				Annotations: map[string]string{"deployment.kubernetes.io/revision": "3"}},
			Spec: appsv1.DeploymentSpec{
				Replicas:             ptr.To(replicas),
				Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
				Template:             corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: p.Labels, Annotations: p.Annotations}, Spec: p.Spec},
				Strategy:             appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType},
				RevisionHistoryLimit: ptr.To(int32(10)), ProgressDeadlineSeconds: ptr.To(int32(600)),
			},
		}
		return d
	}
	deployCreate := func(desc string, allowed bool, d *appsv1.Deployment) {
		b.add(desc, allowed, admissionv1.AdmissionRequest{
			Kind: deployGVK, Resource: deployGVR, Name: d.Name, Namespace: d.Namespace,
			Operation: admissionv1.Create, UserInfo: deployer,
			Object: raw(t, d), Options: options(t, "CreateOptions"),
		})
	}
	deployUpdate := func(desc string, allowed bool, old, d *appsv1.Deployment) {
		b.add(desc, allowed, admissionv1.AdmissionRequest{
			Kind: deployGVK, Resource: deployGVR, Name: d.Name, Namespace: d.Namespace,
			Operation: admissionv1.Update, UserInfo: deployer,
			Object: raw(t, d), OldObject: raw(t, old), Options: options(t, "UpdateOptions"),
		})
	}
	deployCreate("deployment create, 3 replicas", true, deploy("api", "shop", 3))
	deployCreate("deployment create, 50 replicas", true, deploy("checkout", "payments", 50))
	deployCreate("deployment create, privileged template (no deployment policy)", true, deploy("agent", "shop", 2,
		first(func(c *corev1.Container) { c.SecurityContext.Privileged = ptr.To(true) })))
	deployCreate("deployment create, 100 replicas", false, deploy("batch", "shop", 100))
	deployUpdate("deployment update, 3 to 5 replicas", true, deploy("api", "shop", 3), deploy("api", "shop", 5))
	deployUpdate("deployment update, 3 to 80 replicas", false, deploy("api", "shop", 3), deploy("api", "shop", 80))
	deployUpdate("deployment update in kube-system, 80 replicas (exempt)", true, deploy("coredns", "kube-system", 2), deploy("coredns", "kube-system", 80))
	d := deploy("web", "payments", 4)
	b.add("deployment delete", true, admissionv1.AdmissionRequest{
		Kind: deployGVK, Resource: deployGVR, Name: d.Name, Namespace: d.Namespace,
		Operation: admissionv1.Delete, UserInfo: deployer,
		OldObject: raw(t, d), Options: options(t, "DeleteOptions"),
	})

	// The scale subresource (autoscaling/v1 Scale), UPDATE only.
	scale := func(name, ns string, replicas int32) *autoscalingv1.Scale {
		return &autoscalingv1.Scale{
			TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: "d3e10000-0000-4000-8000-000000000003"},
			Spec:       autoscalingv1.ScaleSpec{Replicas: replicas},
			Status:     autoscalingv1.ScaleStatus{Replicas: 3, Selector: "app=api"},
		}
	}
	for _, s := range []struct {
		replicas int32
		allowed  bool
	}{{10, true}, {60, false}} {
		b.add(fmt.Sprintf("deployments/scale update to %d", s.replicas), s.allowed, admissionv1.AdmissionRequest{
			Kind: scaleGVK, Resource: deployGVR, SubResource: "scale", Name: "api", Namespace: "shop",
			RequestKind: &scaleGVK, RequestResource: &deployGVR, RequestSubResource: "scale",
			Operation: admissionv1.Update, UserInfo: hpaController,
			Object: raw(t, scale("api", "shop", s.replicas)), OldObject: raw(t, scale("api", "shop", 3)),
			Options: options(t, "UpdateOptions"),
		})
	}
	return b.items
}

// TestCorpus checks that every body decodes as an AdmissionReview v1 with
// the k8s.io/api types, and reports the mix. It is quick and runs in
// `go test ./...`.
func TestCorpus(t *testing.T) {
	items := buildCorpus(t)
	var denied, size int
	uids := map[string]bool{}
	for _, it := range items {
		var rev admissionv1.AdmissionReview
		if err := json.Unmarshal(it.body, &rev); err != nil {
			t.Fatalf("%s: %v", it.desc, err)
		}
		if rev.Request == nil || string(rev.Request.UID) != it.uid || uids[it.uid] {
			t.Fatalf("%s: bad or duplicate uid", it.desc)
		}
		uids[it.uid] = true
		if !it.allowed {
			denied++
		}
		size += len(it.body)
	}
	if denied == 0 || denied == len(items) {
		t.Fatalf("the corpus must mix allowed and denied requests: %d of %d denied", denied, len(items))
	}
	t.Logf("%d items, %d denied, mean body %d bytes", len(items), denied, size/len(items))
}
