package admission_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/request"

	"github.com/portcullis-dev/portcullis/internal/admission"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/fault"
)

const podReview = `{
  "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
  "request": {
    "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
    "kind": {"group": "", "version": "v1", "kind": "Pod"},
    "resource": {"group": "", "version": "v1", "resource": "pods"},
    "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
    "requestResource": {"group": "", "version": "v1", "resource": "pods"},
    "name": "web", "namespace": "prod", "operation": "CREATE",
    "userInfo": {"username": "alice", "groups": ["dev", "system:authenticated"]},
    "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"app": "web"}},
               "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "resources": {"limits": {"cpu": "1"}}}], "terminationGracePeriodSeconds": 30, "x": 1.5}},
    "oldObject": null,
    "dryRun": true,
    "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
  }
}`

func TestDecode(t *testing.T) {
	rev, err := admission.Decode([]byte(podReview))
	if err != nil {
		t.Fatal(err)
	}
	r := rev.Request
	if rev.APIVersion != admission.V1 || rev.UID != "705ab4f5-6393-11e8-b7cc-42010a800002" {
		t.Fatalf("envelope: %+v", rev)
	}
	if r.Kind.Kind != "Pod" || r.Resource.Resource != "pods" || r.Namespace != "prod" || r.Name != "web" ||
		r.Operation != "CREATE" || !r.DryRun || r.UserInfo.Username != "alice" || len(r.UserInfo.Groups) != 2 {
		t.Fatalf("request: %+v", r)
	}
	if r.OldObject != nil {
		t.Fatalf("oldObject = %v, want nil", r.OldObject)
	}
	spec := r.Object["spec"].(map[string]any)
	// Integers stay int64 and other numbers float64, as in the apiserver.
	if _, ok := spec["terminationGracePeriodSeconds"].(int64); !ok {
		t.Fatalf("integer decoded as %T", spec["terminationGracePeriodSeconds"])
	}
	if _, ok := spec["x"].(float64); !ok {
		t.Fatalf("float decoded as %T", spec["x"])
	}
	if !strings.Contains(string(r.Options.Raw), "CreateOptions") {
		t.Fatalf("options: %s", r.Options.Raw)
	}
}

func TestDecodeV1beta1WithoutRequestKind(t *testing.T) {
	body := `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u1",
	  "kind":{"group":"apps","version":"v1","kind":"Deployment"},"resource":{"group":"apps","version":"v1","resource":"deployments"},
	  "subResource":"scale","operation":"UPDATE","namespace":"a","name":"d","object":{"kind":"Scale"},"oldObject":{"kind":"Scale"}}}`
	rev, err := admission.Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	r := rev.Request
	if rev.APIVersion != admission.V1beta1 || r.RequestKind != r.Kind || r.RequestResource != r.Resource || r.RequestSubResource != "scale" {
		t.Fatalf("request kind/resource not defaulted from kind/resource: %+v", r)
	}
}

// A request the apiserver converted for the webhook keeps the original
// request's kind, resource and subresource beside what the webhook
// received: the policies match the original.
func TestDecodeConvertedRequest(t *testing.T) {
	body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",
	  "kind":{"group":"apps","version":"v1beta1","kind":"Deployment"},"resource":{"group":"apps","version":"v1beta1","resource":"deployments"},
	  "subResource":"status","requestKind":{"group":"apps","version":"v1","kind":"Deployment"},
	  "requestResource":{"group":"apps","version":"v1","resource":"deployments"},"requestSubResource":"scale",
	  "operation":"UPDATE","namespace":"a","name":"d","object":{"kind":"Deployment"},"oldObject":{"kind":"Deployment"}}}`
	rev, err := admission.Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	r := rev.Request
	if r.Kind.Version != "v1beta1" || r.Resource.Version != "v1beta1" || r.SubResource != "status" {
		t.Fatalf("received kind/resource: %+v", r)
	}
	if r.RequestKind.Version != "v1" || r.RequestKind.Kind != "Deployment" || r.RequestResource.Version != "v1" ||
		r.RequestResource.Resource != "deployments" || r.RequestSubResource != "scale" {
		t.Fatalf("original kind/resource not kept: %+v", r)
	}
}

func TestDecodeRejects(t *testing.T) {
	valid := func(mut func(m map[string]any)) string {
		var m map[string]any
		_ = json.Unmarshal([]byte(podReview), &m)
		mut(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	req := func(m map[string]any) map[string]any { return m["request"].(map[string]any) }
	tests := []struct {
		name, body, want string
	}{
		{"empty body", ``, "not a valid AdmissionReview JSON"},
		{"not JSON", `hello`, "not a valid AdmissionReview JSON"},
		{"truncated", podReview[:200], "not a valid AdmissionReview JSON"},
		{"array", `[]`, "AdmissionReview must be a JSON object"},
		{"no apiVersion", valid(func(m map[string]any) { delete(m, "apiVersion") }), "apiVersion is missing"},
		{"unknown version", valid(func(m map[string]any) { m["apiVersion"] = "admission.k8s.io/v2" }), `unsupported AdmissionReview apiVersion "admission.k8s.io/v2"`},
		{"field names are case-sensitive", strings.Replace(podReview, `"apiVersion"`, `"APIVersion"`, 1), "apiVersion is missing"},
		{"wrong kind", valid(func(m map[string]any) { m["kind"] = "Pod" }), `kind is "Pod"`},
		{"no request", valid(func(m map[string]any) { delete(m, "request") }), "has no request"},
		{"null request", valid(func(m map[string]any) { m["request"] = nil }), "has no request"},
		{"no uid", valid(func(m map[string]any) { delete(req(m), "uid") }), "request.uid is missing"},
		{"bad operation", valid(func(m map[string]any) { req(m)["operation"] = "PATCH" }), `request.operation "PATCH"`},
		{"no resource", valid(func(m map[string]any) { delete(req(m), "resource") }), "request.kind and request.resource are required"},
		{"object not an object", valid(func(m map[string]any) { req(m)["object"] = "x" }), "request.object must be a JSON object"},
		{"uid wrong type", valid(func(m map[string]any) { req(m)["uid"] = 5 }), "request.uid must be a string"},
		{"groups wrong type", valid(func(m map[string]any) { req(m)["userInfo"] = map[string]any{"groups": "admins"} }), "request.userInfo.groups must be a list of strings"},
		{"dryRun wrong type", valid(func(m map[string]any) { req(m)["dryRun"] = "yes" }), "request.dryRun must be a boolean"},
		{"kind wrong type", valid(func(m map[string]any) { req(m)["kind"] = "Pod" }), "request.kind must be a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := admission.Decode([]byte(tt.body))
			e, ok := err.(*fault.Error)
			if !ok || e.Code != fault.BadRequest || !strings.Contains(e.Message, tt.want) {
				t.Fatalf("Decode = %v, want 400 containing %q", err, tt.want)
			}
		})
	}
}

// Every answer passes the apiserver's own check of a webhook's reply.
func TestEncodePassesTheApiserversCheck(t *testing.T) {
	deny := &metav1.Status{Status: metav1.StatusFailure, Code: 422, Reason: metav1.StatusReasonInvalid,
		Message: `pods "web" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no`}
	tests := []struct {
		name       string
		apiVersion string
		resp       admission.Response
		mutating   bool
	}{
		{"v1 allowed", admission.V1, admission.Response{Allowed: true}, false},
		{"v1 denied", admission.V1, admission.Response{Status: deny}, false},
		{"v1 warnings and annotations", admission.V1, admission.Response{Allowed: true, Warnings: []string{"w1", "w1", strings.Repeat("x", 500)},
			AuditAnnotations: []evaluator.AuditAnnotation{{Key: "validation.policy.admission.k8s.io/validation_failure", Value: `[{"message":"m"}]`}, {Key: "p/k", Value: "v"}}}, false},
		{"v1beta1 allowed", admission.V1beta1, admission.Response{Allowed: true}, false},
		{"v1beta1 denied", admission.V1beta1, admission.Response{Status: deny, Warnings: []string{"w"}}, false},
		{"v1 patch", admission.V1, admission.Response{Allowed: true, Patch: []byte(`[{"op":"add","path":"/metadata/labels","value":{"team":"a"}}]`)}, true},
		{"v1beta1 patch", admission.V1beta1, admission.Response{Allowed: true, Patch: []byte(`[{"op":"add","path":"/metadata/labels","value":{"team":"a"}}]`)}, true},
		{"v1 mutating, unchanged", admission.V1, admission.Response{Allowed: true}, true},
	}
	const uid = types.UID("u-1")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := admission.Encode(tt.apiVersion, uid, tt.resp)
			if err != nil {
				t.Fatal(err)
			}
			var obj runtime.Object
			if tt.apiVersion == admission.V1 {
				r := &admissionv1.AdmissionReview{}
				err = json.Unmarshal(b, r)
				obj = r
			} else {
				r := &admissionv1beta1.AdmissionReview{}
				err = json.Unmarshal(b, r)
				obj = r
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := request.VerifyAdmissionResponse(uid, tt.mutating, obj)
			if err != nil {
				t.Fatalf("the apiserver rejects the answer: %v\n%s", err, b)
			}
			if !bytes.Equal(got.Patch, tt.resp.Patch) || (len(tt.resp.Patch) > 0) != (got.PatchType == "JSONPatch") {
				t.Fatalf("patch %s (type %q), want %s", got.Patch, got.PatchType, tt.resp.Patch)
			}
			if got.Allowed != tt.resp.Allowed || len(got.Warnings) != len(tt.resp.Warnings) {
				t.Fatalf("verified response %+v differs from %+v", got, tt.resp)
			}
			for i, w := range tt.resp.Warnings {
				if got.Warnings[i] != w {
					t.Fatalf("warning %d = %q, want %q unchanged", i, got.Warnings[i], w)
				}
			}
			if tt.resp.Status != nil && (got.Result == nil || got.Result.Message != tt.resp.Status.Message || got.Result.Code != tt.resp.Status.Code) {
				t.Fatalf("status = %+v", got.Result)
			}
			if len(got.AuditAnnotations) != len(tt.resp.AuditAnnotations) {
				t.Fatalf("annotations = %v", got.AuditAnnotations)
			}
			if !strings.Contains(string(b), `"apiVersion":"`+tt.apiVersion+`"`) || !strings.Contains(string(b), `"kind":"AdmissionReview"`) {
				t.Fatalf("envelope: %s", b)
			}
		})
	}
}
