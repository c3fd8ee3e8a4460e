package admission_test

import (
	"encoding/json"
	"os"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/portcullis-dev/portcullis/internal/admission"
)

// BenchmarkDecode decodes an UPDATE review of the realistic ~6 KB baseline
// Pod (object and oldObject), as the webhook does for every request.
func BenchmarkDecode(b *testing.B) {
	body := updateReview(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := admission.Decode(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeLibrary is the path the hand-written decoder replaced, on
// the same review: encoding/json into the k8s.io/api AdmissionReview, then
// each object into a map with the apimachinery JSON helpers (which give
// int64 and float64 numbers, as the evaluator needs). scripts/bench-decode.sh
// runs the two side by side; the hand-written parser has to keep earning
// its place against this.
func BenchmarkDecodeLibrary(b *testing.B) {
	body := updateReview(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var rev admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &rev); err != nil {
			b.Fatal(err)
		}
		var obj, old map[string]any
		if err := utiljson.Unmarshal(rev.Request.Object.Raw, &obj); err != nil {
			b.Fatal(err)
		}
		if err := utiljson.Unmarshal(rev.Request.OldObject.Raw, &old); err != nil {
			b.Fatal(err)
		}
	}
}

// updateReview is an AdmissionReview v1 UPDATE of the baseline Pod.
func updateReview(b *testing.B) []byte {
	b.Helper()
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
	return body
}
