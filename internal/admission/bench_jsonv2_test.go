//go:build goexperiment.jsonv2

package admission_test

import (
	jsonv2 "encoding/json/v2"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
)

// BenchmarkDecodeJSONv2 is BenchmarkDecodeLibrary with the JSON v2 design
// (GOEXPERIMENT=jsonv2). It only measures: v2 decodes numbers in a map as
// float64 and matches field names differently, so it would still need the
// apiserver's semantics put back on top.
func BenchmarkDecodeJSONv2(b *testing.B) {
	body := updateReview(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var rev admissionv1.AdmissionReview
		if err := jsonv2.Unmarshal(body, &rev); err != nil {
			b.Fatal(err)
		}
		var obj, old map[string]any
		if err := jsonv2.Unmarshal(rev.Request.Object.Raw, &obj); err != nil {
			b.Fatal(err)
		}
		if err := jsonv2.Unmarshal(rev.Request.OldObject.Raw, &old); err != nil {
			b.Fatal(err)
		}
	}
}
