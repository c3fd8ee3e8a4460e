package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// scaleTypeError is how the MutatingAdmissionPolicy plugin fails an apply
// configuration on a Scale: the apiserver's autoscaling/v1 OpenAPI
// document, where its type converter looks, has no Scale. The gateway
// must give the same answer (checkScaleCapped), and a JSON patch caps.
const scaleTypeError = "error applying patch: failed to convert patch object to typed object: no corresponding type for autoscaling/v1, Kind=Scale"

// TestInProcessPluginOnScale is the reference for the gateway's answers on
// deployments/scale: the real kube-apiserver's own MutatingAdmissionPolicy
// plugin, with no webhook configured, fails an ApplyConfiguration on the
// Scale with scaleTypeError and caps it with a JSONPatch.
func TestInProcessPluginOnScale(t *testing.T) {
	bin := kubeAPIServer(t)
	etcd := startEtcd(t)
	cfg := filepath.Join(t.TempDir(), "admission.yaml")
	writeFile(t, cfg, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins: []\n"))
	s := startAPIServer(t, bin, etcd, "inproc", cfg)
	cs := kubernetes.NewForConfigOrDie(s.config)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fail := admissionregistrationv1.Fail
	never := admissionregistrationv1.NeverReinvocationPolicy
	mk := func(name string, m admissionregistrationv1.Mutation) {
		p := &admissionregistrationv1.MutatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				FailurePolicy: &fail, ReinvocationPolicy: never,
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{"UPDATE"},
						Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments/scale"}}}}}},
				MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "n", Expression: fmt.Sprintf("object.metadata.name == %q", name)}},
				Mutations:       []admissionregistrationv1.Mutation{m},
			}}
		if _, err := cs.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name}}
		if _, err := cs.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		createDeployment(t, cs.AppsV1().Deployments("shop"), name, 1)
	}
	mk("ac", admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
		ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{spec: Object.spec{replicas: 5}}`}})
	mk("jp", admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
		JSONPatch: &admissionregistrationv1.JSONPatch{Expression: `[JSONPatch{op: "replace", path: "/spec/replicas", value: 5}]`}})
	scale := func(name string) (int32, error) {
		sc := &autoscalingv1.Scale{}
		err := cs.AppsV1().RESTClient().Patch(types.MergePatchType).Namespace("shop").Resource("deployments").
			Name(name).SubResource("scale").Body([]byte(`{"spec":{"replicas":9}}`)).Do(ctx).Into(sc)
		return sc.Spec.Replicas, err
	}
	// The plugin sees new policies through its informers, within seconds.
	var err error
	eventually(t, 30*time.Second, "the apply configuration on the Scale to be refused", func() bool {
		_, err = scale("ac")
		return err != nil
	})
	want := "policy 'ac' with binding 'ac' denied request: " + scaleTypeError
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("ApplyConfiguration on deployments/scale: got %v, want %q", err, want)
	}
	var replicas int32
	eventually(t, 30*time.Second, "the JSON patch to cap the Scale at 5", func() bool {
		replicas, err = scale("jp")
		if err != nil {
			t.Fatalf("JSONPatch on deployments/scale: %v", err)
		}
		return replicas == 5
	})
}
