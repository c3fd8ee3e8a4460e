package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// adminUser is the user the test acts as (the CN of its client certificate);
// the apiserver hands it to the webhooks in every review.
const adminUser = "e2e-admin"

// wantMutatedBy are the sample policies whose mutations apply to the
// allowed Pod, sorted: all five, default-image-pull-policy too, although
// its apply changes nothing (see samplePods); the plugin counts a policy
// whose mutation ran as mutating, and the decision does the same.
var wantMutatedBy = []string{"default-image-pull-policy", "ephemeral-storage-limit", "runtime-default-seccomp", "spot-toleration", "team-label"}

// samplePods returns samples/baseline/pod.json, which meets every baseline
// policy, made into a Pod that each sample mutation changes, and a copy of
// it with an image from an unapproved registry.
//
// What the mutations find to change: the pod-level seccompProfile and the
// containers' imagePullPolicy are removed (the apiserver defaults
// imagePullPolicy before mutating admission, so default-image-pull-policy
// finds it set, as it would in the in-process plugin); the containers have
// no ephemeral-storage limit and the Pod no spot toleration. What a real
// apiserver refuses or sets itself is cleared: the owner (no such
// ReplicaSet), priority and preemptionPolicy (the Priority plugin sets
// them) and the tolerations (DefaultTolerationSeconds adds them). The
// containers' ports are renamed apart: all three are named "http", which
// the apiserver accepts with a warning per create.
func samplePods(t *testing.T) (allowed, denied *corev1.Pod) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "samples", "baseline", "pod.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p corev1.Pod
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	p.Name, p.GenerateName, p.Namespace, p.OwnerReferences = "api-0", "", namespace, nil
	p.Spec.Priority, p.Spec.PreemptionPolicy, p.Spec.Tolerations = nil, nil, nil
	p.Spec.SecurityContext.SeccompProfile = nil
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		for j := range c.Ports {
			c.Ports[j].Name = fmt.Sprintf("%s-%d", c.Ports[j].Name, i)
		}
		c.ImagePullPolicy = ""
		delete(c.Resources.Limits, corev1.ResourceEphemeralStorage)
	}
	allowed = p.DeepCopy()
	denied = p.DeepCopy()
	denied.Name = "api-unapproved"
	denied.Spec.Containers[0].Image = "docker.io/library/nginx:1.27"
	return allowed, denied
}

// samplePod is the allowed Pod of samplePods, named name.
func samplePod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	p, _ := samplePods(t)
	p.Name = name
	return p
}

// checkMutations checks the effect of each sample mutation on pod, and
// that what the Pod sent kept its values.
func checkMutations(t *testing.T, what string, sent, pod *corev1.Pod) {
	t.Helper()
	if got := pod.Labels["example.com/team"]; got != sent.Namespace {
		t.Errorf("%s: team-label: label example.com/team = %q, want %q", what, got, sent.Namespace)
	}
	if pod.Labels["app"] != "api" || pod.Labels["team"] != "checkout" {
		t.Errorf("%s: the Pod's own labels were lost: %v", what, pod.Labels)
	}
	if sc := pod.Spec.SecurityContext; sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: runtime-default-seccomp: securityContext %+v, want seccompProfile RuntimeDefault", what, sc)
	} else if sc.RunAsUser == nil || *sc.RunAsUser != 10001 {
		t.Errorf("%s: the Pod's own securityContext was lost: %+v", what, sc)
	}
	spot := 0
	for _, tol := range pod.Spec.Tolerations {
		if tol.Key == "example.com/spot" {
			spot++
			if tol.Operator != corev1.TolerationOpExists || tol.Effect != corev1.TaintEffectNoSchedule {
				t.Errorf("%s: spot-toleration: %+v, want operator Exists, effect NoSchedule", what, tol)
			}
		}
	}
	if spot != 1 {
		t.Errorf("%s: spot-toleration: %d tolerations of example.com/spot, want 1: %+v", what, spot, pod.Spec.Tolerations)
	}
	if len(pod.Spec.Containers) != len(sent.Spec.Containers) {
		t.Fatalf("%s: %d containers, want the %d sent", what, len(pod.Spec.Containers), len(sent.Spec.Containers))
	}
	oneGi := resource.MustParse("1Gi")
	for i, c := range pod.Spec.Containers {
		want := sent.Spec.Containers[i]
		if c.Name != want.Name || c.Image != want.Image {
			t.Errorf("%s: container %d is %s %s, want %s %s", what, i, c.Name, c.Image, want.Name, want.Image)
		}
		if q, ok := c.Resources.Limits[corev1.ResourceEphemeralStorage]; !ok || q.Cmp(oneGi) != 0 {
			t.Errorf("%s: ephemeral-storage-limit: container %s limits %v, want ephemeral-storage 1Gi", what, c.Name, c.Resources.Limits)
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, w := c.Resources.Limits[r], want.Resources.Limits[r]; q.Cmp(w) != 0 {
				t.Errorf("%s: container %s: %s limit %v, want the %v sent", what, c.Name, r, q.String(), w.String())
			}
		}
		if c.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("%s: default-image-pull-policy: container %s imagePullPolicy %q, want IfNotPresent", what, c.Name, c.ImagePullPolicy)
		}
	}
}
