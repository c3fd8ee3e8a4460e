package e2e

import (
	"context"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// checkOutage wires one more cluster and stops the gateway. The generated
// configurations fail closed (failurePolicy Fail), so the apiserver refuses
// what they cover; what the good practices keep away from webhooks, and
// the configurations leave out, is still admitted: kube-system (their
// namespaceSelector) and leases (their matchConditions), so that a gateway
// outage does not stop the control plane. It runs last: the gateway stays
// down.
func checkOutage(t *testing.T, g *gateway, apiserverBin, etcd string) {
	_, cs := wire(t, g, apiserverBin, etcd, "e2e-outage", "token")
	ctx := context.Background()
	g.stop()

	const wantRefusal = `failed calling webhook "mutate.portcullis.dev"`
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, samplePod(t, "api-outage"), metav1.CreateOptions{}); err == nil ||
		!strings.Contains(err.Error(), wantRefusal) {
		t.Errorf("create a Pod with the gateway down: got %v, want %q", err, wantRefusal)
	}
	if _, err := cs.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "outage"}},
		metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), wantRefusal) {
		t.Errorf("create a ConfigMap with the gateway down: got %v, want %q", err, wantRefusal)
	}

	holder := "e2e"
	if _, err := cs.CoordinationV1().Leases(namespace).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "outage"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}},
		metav1.CreateOptions{}); err != nil {
		t.Errorf("create a Lease with the gateway down (matchConditions leave leases out): %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "outage"}},
		metav1.CreateOptions{}); err != nil {
		t.Errorf("create a ConfigMap in kube-system with the gateway down (the namespaceSelector leaves it out): %v", err)
	}
}
