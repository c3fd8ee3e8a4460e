package admission

import (
	"net/http"
	"reflect"
	"testing"
)

// decodeBoth decodes body with the fast decoder and with the general one;
// they must agree on refusing it (always with a 400) or on every field.
func decodeBoth(t *testing.T, body []byte) {
	t.Helper()
	fast, fastErr := Decode(body)
	var ref *Review
	w, refErr := unmarshalReference(body)
	if refErr == nil {
		ref, refErr = fromWire(w)
	}
	if (fastErr != nil) != (refErr != nil) {
		t.Fatalf("%q:\nfast error:      %v\nreference error: %v", body, fastErr, refErr)
	}
	if fastErr != nil {
		if e, ok := fastErr.(*Error); !ok || e.Code != http.StatusBadRequest {
			t.Fatalf("%q: fast refusal %v is not a 400", body, fastErr)
		}
		return
	}
	if !reflect.DeepEqual(fast, ref) {
		t.Fatalf("%q:\nfast      %#v\nreference %#v", body, fast.Request, ref.Request)
	}
}

var decodeSeeds = []string{
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"requestKind":{"group":"","version":"v1","kind":"Pod"},"requestResource":{"group":"","version":"v1","resource":"pods"},"requestSubResource":"","subResource":"","name":"a","namespace":"b","operation":"CREATE","userInfo":{"username":"alice","uid":"1","groups":["g1","g2"],"extra":{"k":["v"],"e":[]}},"object":{"a":[1,2.5,"x",null,true,{}]},"oldObject":null,"dryRun":true,"options":{"apiVersion":"meta.k8s.io/v1","kind":"CreateOptions","dryRun":["All"]}}}`,
	`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"subResource":"status","operation":"UPDATE","object":{"x":1},"oldObject":{"x":2}}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"operation":"DELETE","oldObject":{"x":2},"object":"bad","object":{"y":1}}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"a","name":"n"},"request":{"uid":"b","kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"operation":"CREATE"}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":null,"uid":"u","userInfo":{"extra":{"a":["1"]},"extra":{"b":null},"groups":["x"],"groups":null},"kind":{"version":"v1","kind":"Pod"},"kind":{"group":"apps"},"requestKind":null,"resource":{"version":"v1","resource":"pods"},"operation":"CONNECT","dryRun":null,"options":null,"unknown":[1,{"a":2}]}}`,
	`{"APIVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u"}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","userInfo":{"groups":["a",null,"b"]},"kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"operation":"CREATE","object":{"s":"\ud800\u00e9\n"}}}`,
	`[]`, `null`, `{}`, `{"request":[]}`, `{"request":{"uid":5}}`, `{"request":{"dryRun":"yes","uid":"u"}}`,
	`{"apiVersion":1}`, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"operation":"CREATE","object":{"n":1e400}}}`,
}

func TestFastDecodeMatchesReference(t *testing.T) {
	for _, s := range decodeSeeds {
		decodeBoth(t, []byte(s))
	}
}

// FuzzFastDecode compares the fast decoder with the general one.
func FuzzFastDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { decodeBoth(t, body) })
}
