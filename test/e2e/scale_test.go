package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedappsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
)

// capScale is a MutatingAdmissionPolicy, and its binding, named name,
// that caps the replicas a scale of the Deployment "capped" asks for at 5
// with mutation. The object of deployments/scale is an autoscaling/v1
// Scale, which the apiserver's autoscaling/v1 OpenAPI document lacks, so
// the plugin (and the gateway) cannot merge an apply configuration into
// it: a JSON patch does it.
func capScale(name, mutation string) []byte {
	return []byte(`apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: ` + name + `
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["UPDATE"]
      resources: ["deployments/scale"]
  matchConditions:
  - name: capped
    expression: object.metadata.name == "capped"
  reinvocationPolicy: Never
  mutations:
  - ` + mutation + `
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: ` + name + `
spec:
  policyName: ` + name + `
`)
}

const (
	capJSONPatch = `patchType: JSONPatch
    jsonPatch:
      expression: >
        object.spec.replicas > 5 ? [JSONPatch{op: "replace", path: "/spec/replicas", value: 5}] : []`
	capApplyConfiguration = `patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{spec: Object.spec{replicas: 5}}`
)

// checkScaleCapped scales a Deployment to 9 the way kubectl scale does (a
// merge PATCH of deployments/scale), through the apiserver, and finds it
// capped at 5 by the gateway's mutating webhook.
func checkScaleCapped(t *testing.T, g *gateway, cs kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	g.runInput(t, capScale("cap-scale", capJSONPatch), "apply", "--tenant", tenant, "-f", "-")
	deployments := cs.AppsV1().Deployments(namespace)
	d := createDeployment(t, deployments, "capped", 1)
	// kubectl scale --replicas=n deployment/capped: a merge patch of the
	// scale subresource, answered with the Scale stored.
	scale := func(n int) (*autoscalingv1.Scale, error) {
		s := &autoscalingv1.Scale{}
		err := cs.AppsV1().RESTClient().Patch(types.MergePatchType).Namespace(namespace).Resource("deployments").
			Name(d.Name).SubResource("scale").Body([]byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n))).Do(ctx).Into(s)
		return s, err
	}
	// The policy reaches the webhook's snapshot within a second.
	eventually(t, 30*time.Second, "the scale to 9 to be capped at 5", func() bool {
		s, err := scale(9)
		if err != nil {
			t.Fatalf("scale to 9: %v", err)
		}
		return s.Spec.Replicas == 5
	})
	stored, err := deployments.Get(ctx, d.Name, metav1.GetOptions{})
	if err != nil || *stored.Spec.Replicas != 5 {
		t.Fatalf("after the capped scale: %v, %v; want 5 replicas", err, stored)
	}
	// Below the cap, a scale is left as asked.
	s, err := scale(3)
	if err != nil || s.Spec.Replicas != 3 {
		t.Fatalf("scale to 3: %v, %v; want 3 replicas", err, s)
	}

	// The same cap as an apply configuration fails as the apiserver's own
	// plugin fails it (TestInProcessPluginOnScale), and failurePolicy
	// Fail refuses the scale.
	g.runInput(t, capScale("cap-scale-apply", capApplyConfiguration), "apply", "--tenant", tenant, "-f", "-")
	eventually(t, 30*time.Second, "the apply configuration on the Scale to be refused", func() bool {
		_, err = scale(8)
		return err != nil
	})
	want := "policy 'cap-scale-apply' with binding 'cap-scale-apply' denied request: " + scaleTypeError
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("ApplyConfiguration on deployments/scale: got %v, want %q", err, want)
	}
	g.run(t, "delete", "--tenant", tenant, "mapb", "cap-scale-apply")
}

// createDeployment creates a Deployment of one container, named name,
// with replicas, and returns it.
func createDeployment(t *testing.T, deployments typedappsv1.DeploymentInterface, name string, replicas int32) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "registry.example.com/shop/web:v1"}}},
			},
		},
	}
	if _, err := deployments.Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment %s: %v", name, err)
	}
	return d
}
