package admission_test

import (
	"testing"

	"github.com/portcullis-dev/portcullis/internal/admission"
	"github.com/portcullis-dev/portcullis/internal/fault"
)

// FuzzDecode: no input panics the decoder, every refusal is a 400 with a
// message, and every accepted review has a uid and a request.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(podReview))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"operation":"DELETE","oldObject":{"a":[1,2.5,"x",null,true]}}}`))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","object":{"a":1e400}}}`))
	f.Add([]byte(`{"request":{"uid":"u","uid":"v"}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		rev, err := admission.Decode(body)
		if err != nil {
			e, ok := err.(*fault.Error)
			if !ok || e.Code != fault.BadRequest || e.Message == "" {
				t.Fatalf("refusal %v is not a 400 with a message", err)
			}
			return
		}
		if rev.UID == "" || rev.Request == nil {
			t.Fatalf("accepted a review without uid or request: %+v", rev)
		}
		if _, err := admission.Encode(rev.APIVersion, rev.UID, admission.Response{Allowed: true}); err != nil {
			t.Fatal(err)
		}
	})
}
