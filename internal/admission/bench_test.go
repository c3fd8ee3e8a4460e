package admission_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/admission"
)

// BenchmarkDecode decodes an UPDATE review of the realistic ~6 KB baseline
// Pod (object and oldObject), as the webhook does for every request.
func BenchmarkDecode(b *testing.B) {
	pod, err := os.ReadFile("../../samples/baseline/pod.json")
	if err != nil {
		b.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{
		"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"request": map[string]any{
			"uid":       "6f1b",
			"kind":      map[string]string{"version": "v1", "kind": "Pod"},
			"resource":  map[string]string{"version": "v1", "resource": "pods"},
			"namespace": "shop", "name": "api", "operation": "UPDATE",
			"userInfo": map[string]any{"username": "system:serviceaccount:kube-system:replicaset-controller", "groups": []string{"system:serviceaccounts"}},
			"object":   json.RawMessage(pod), "oldObject": json.RawMessage(pod),
			"options": map[string]string{"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions"},
		},
	})
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := admission.Decode(body); err != nil {
			b.Fatal(err)
		}
	}
}
