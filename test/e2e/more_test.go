package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// checkBeyondCreate sends what else reaches the webhooks in a cluster: a
// namespace created after the wiring and Pods in it, an UPDATE of the
// created Pod, an exec (CONNECT, with a PodExecOptions), a
// scale subresource (another kind, Scale, under the Deployment's rules)
// and a Pod in kube-system, which the webhooks' namespaceSelector leaves
// out.
func checkBeyondCreate(t *testing.T, g *gateway, cs kubernetes.Interface, cluster string, created, denied *corev1.Pod) {
	t.Helper()
	ctx := context.Background()

	// kube-system: the Pod the baseline denies in "shop" is stored as sent,
	// without a call to the gateway.
	if _, err := cs.CoreV1().ServiceAccounts("kube-system").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
		Name: "api"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sys := denied.DeepCopy()
	sys.Namespace = "kube-system"
	got, err := cs.CoreV1().Pods("kube-system").Create(ctx, sys, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s in kube-system: %v", sys.Name, err)
	}
	if _, ok := got.Labels["example.com/team"]; ok {
		t.Errorf("the Pod in kube-system was mutated: labels %v", got.Labels)
	}

	// A namespace created after the wiring reaches the gateway through the
	// validating webhook's namespaces rule, in time for the next request:
	// a Pod created right after it is mutated and validated with the
	// namespace's labels known, with no retry.
	late := "late"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: late, Labels: map[string]string{"team": "payments"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", late, err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(late).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
		Name: "api"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	inLate := created.DeepCopy()
	inLate.Namespace = late
	got, err = cs.CoreV1().Pods(late).Create(ctx, inLate, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s in the new namespace: %v", inLate.Name, err)
	}
	if got.Labels["example.com/team"] != late {
		t.Errorf("the Pod in the new namespace: labels %v, want example.com/team=%s", got.Labels, late)
	}
	lateDenied := denied.DeepCopy()
	lateDenied.Namespace = late
	if _, err := cs.CoreV1().Pods(late).Create(ctx, lateDenied, metav1.CreateOptions{}); err == nil ||
		!strings.Contains(err.Error(), "images from unapproved registries") {
		t.Errorf("create %s in the new namespace: got %v, want the registry allowlist's denial", lateDenied.Name, err)
	}

	// An UPDATE goes through both webhooks; the CREATE-only mutations are
	// not applied again.
	pods := cs.CoreV1().Pods(namespace)
	p, err := pods.Get(ctx, created.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Labels["version"] = "v2"
	updated, err := pods.Update(ctx, p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update %s: %v", p.Name, err)
	}
	checkMutations(t, "the updated Pod", created, updated)
	if updated.Labels["version"] != "v2" {
		t.Errorf("the update's label was lost: %v", updated.Labels)
	}

	// CONNECT: an exec reaches both webhooks with a PodExecOptions, before
	// the apiserver finds that the Pod has no node to run it on.
	execErr := cs.CoreV1().RESTClient().Post().Namespace(namespace).Resource("pods").Name(created.Name).
		SubResource("exec").Param("container", "api").Param("command", "true").Param("stdout", "true").Do(ctx).Error()
	if execErr == nil || !strings.Contains(execErr.Error(), "does not have a host assigned") {
		t.Fatalf("exec: got %v, want the apiserver's own error after admission", execErr)
	}

	// Scale: baseline-max-replicas matches deployments/scale, whose object
	// is an autoscaling/v1 Scale.
	deployments := cs.AppsV1().Deployments(namespace)
	d := createDeployment(t, deployments, "web", 2)
	scale := func(n int32) error {
		_, err := deployments.UpdateScale(ctx, d.Name, &autoscalingv1.Scale{
			ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: namespace},
			Spec:       autoscalingv1.ScaleSpec{Replicas: n}}, metav1.UpdateOptions{})
		return err
	}
	if err := scale(10); err != nil {
		t.Fatalf("scale to 10: %v", err)
	}
	// The policy sets no reason: the plugin's default is Invalid, 422.
	err = scale(100)
	const wantScale = `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'baseline-max-replicas' ` +
		`with binding 'baseline-max-replicas' denied request: replicas must be at most 50, got 100`
	if err == nil || !strings.HasSuffix(err.Error(), wantScale) || !apierrors.IsInvalid(err) {
		t.Fatalf("scale to 100: got %v (%d), want a 422 saying %q", err, code(err), wantScale)
	}
	if got, err := deployments.Get(ctx, d.Name, metav1.GetOptions{}); err != nil || *got.Spec.Replicas != 10 {
		t.Fatalf("after the denied scale: %v, %v; want 10 replicas", err, got)
	}

	checkScaleCapped(t, g, cs)

	// The scale's denial is recorded after the kube-system Pod and the exec:
	// once it is there, the gateway would have recorded them too.
	// One or more: the apiserver runs validating admission of an update
	// inside its optimistic-concurrency loop, which calls the webhook again
	// when its cached Deployment was stale.
	eventually(t, 30*time.Second, "the denied scale to be recorded", func() bool {
		return len(decisionsOf(t, g, cluster, namespace, "--verdict", "denied", "--kind", "Scale")) >= 1
	})
	connects := decisionsOf(t, g, cluster, namespace, "--kind", "PodExecOptions")
	if len(connects) != 2 || connects[0].Operation != "CONNECT" || connects[0].Verdict != "allowed" ||
		connects[1].Verdict != "allowed" || connects[0].Endpoint == connects[1].Endpoint {
		t.Errorf("the exec's decisions: %+v; want an allowed CONNECT from each webhook", connects)
	}
	if ds := decisionsOf(t, g, cluster, "kube-system"); len(ds) != 0 {
		t.Errorf("the gateway was called for kube-system: %+v", ds)
	}
}

// decisionsOf lists the decisions of cluster in ns, newest first.
func decisionsOf(t *testing.T, g *gateway, cluster, ns string, more ...string) []decision {
	t.Helper()
	raw := g.run(t, append([]string{"decisions", "--tenant", tenant, "--cluster", cluster, "--namespace", ns,
		"--limit", "500", "-o", "json"}, more...)...)
	var list struct{ Items []decision }
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		t.Fatalf("admin decisions -o json: %v\n%s", err, raw)
	}
	return list.Items
}

func code(err error) int32 {
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		return s.Status().Code
	}
	return 0
}
