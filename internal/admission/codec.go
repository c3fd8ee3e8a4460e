// Package admission decodes the AdmissionReview an apiserver sends and
// encodes the answer, in the same admission.k8s.io version.
//
// Decoding is strict about the envelope and fails closed: a review the
// gateway cannot fully understand is refused with a 400 and a message, never
// answered as if it were empty (an empty request would match no policy and
// so be allowed).
package admission

import (
	"bytes"
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	sigsjson "sigs.k8s.io/json"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/fault"
)

// The AdmissionReview versions the gateway speaks.
const (
	V1      = "admission.k8s.io/v1"
	V1beta1 = "admission.k8s.io/v1beta1"
)

// badRequest is every refusal of the codec: a *fault.Error whose Message
// says what is wrong with the review.
func badRequest(format string, args ...any) *fault.Error {
	return fault.Errorf(fault.BadRequest, format, args...)
}

// Review is a decoded AdmissionReview.
type Review struct {
	// APIVersion is V1 or V1beta1; the answer uses the same.
	APIVersion string
	UID        types.UID
	Request    *evaluator.Request
}

// wire mirrors admission.k8s.io/v1 AdmissionReview (v1beta1 has the same
// request fields). Objects stay raw so each is decoded once, straight into
// the evaluator's form.
type wire struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Request    *wireRequest `json:"request"`
}

type wireRequest struct {
	UID                types.UID                    `json:"uid"`
	Kind               metav1.GroupVersionKind      `json:"kind"`
	Resource           metav1.GroupVersionResource  `json:"resource"`
	SubResource        string                       `json:"subResource"`
	RequestKind        *metav1.GroupVersionKind     `json:"requestKind"`
	RequestResource    *metav1.GroupVersionResource `json:"requestResource"`
	RequestSubResource string                       `json:"requestSubResource"`
	Name               string                       `json:"name"`
	Namespace          string                       `json:"namespace"`
	Operation          string                       `json:"operation"`
	UserInfo           authenticationv1.UserInfo    `json:"userInfo"`
	Object             json.RawMessage              `json:"object"`
	OldObject          json.RawMessage              `json:"oldObject"`
	DryRun             *bool                        `json:"dryRun"`
	Options            json.RawMessage              `json:"options"`

	// Set by the fast decoder, which builds the objects while it reads.
	parsed               bool
	object, oldObject    map[string]any
	objectBad, oldObjBad bool  // the last value given was not an object
	objectErr, oldObjErr error // the last value given could not be decoded
}

// Decode parses an AdmissionReview body. Field names are case-sensitive, as
// in the apiserver's own decoder.
func Decode(body []byte) (*Review, error) {
	w, err := unmarshalWire(body)
	if err != nil {
		return nil, err
	}
	return fromWire(w)
}

// unmarshalReference is the general decoder, with the semantics the fast
// one must keep; it also words the errors for invalid JSON.
func unmarshalReference(body []byte) (*wire, error) {
	var w wire
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(body, &w); err != nil {
		return nil, badRequest("the body is not a valid AdmissionReview JSON document: %v", err)
	}
	return &w, nil
}

func fromWire(w *wire) (*Review, error) {
	switch {
	case w.APIVersion != V1 && w.APIVersion != V1beta1:
		if w.APIVersion == "" {
			return nil, badRequest("apiVersion is missing: send an AdmissionReview of %s or %s", V1, V1beta1)
		}
		return nil, badRequest("unsupported AdmissionReview apiVersion %q: this gateway accepts %s and %s", w.APIVersion, V1, V1beta1)
	case w.Kind != "AdmissionReview":
		return nil, badRequest("kind is %q, want AdmissionReview", w.Kind)
	case w.Request == nil:
		return nil, badRequest("the AdmissionReview has no request")
	case w.Request.UID == "":
		return nil, badRequest("request.uid is missing")
	}
	r := w.Request
	switch admissionregistrationv1.OperationType(r.Operation) {
	case admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete, admissionregistrationv1.Connect:
	default:
		return nil, badRequest("request.operation %q is not CREATE, UPDATE, DELETE or CONNECT", r.Operation)
	}
	if r.Resource.Resource == "" || r.Kind.Kind == "" || r.Kind.Version == "" {
		return nil, badRequest("request.kind and request.resource are required")
	}
	req := &evaluator.Request{
		UID:                string(r.UID),
		Kind:               schema.GroupVersionKind(r.Kind),
		Resource:           schema.GroupVersionResource(r.Resource),
		SubResource:        r.SubResource,
		RequestSubResource: r.RequestSubResource,
		Name:               r.Name,
		Namespace:          r.Namespace,
		Operation:          admissionregistrationv1.OperationType(r.Operation),
		UserInfo:           r.UserInfo,
	}
	// Before requestKind existed (v1beta1 from old apiservers) the request
	// was always what the webhook received.
	if r.RequestKind != nil {
		req.RequestKind = schema.GroupVersionKind(*r.RequestKind)
	} else {
		req.RequestKind = req.Kind
	}
	if r.RequestResource != nil {
		req.RequestResource = schema.GroupVersionResource(*r.RequestResource)
	} else {
		req.RequestResource = req.Resource
		req.RequestSubResource = req.SubResource
	}
	if r.DryRun != nil {
		req.DryRun = *r.DryRun
	}
	if len(r.Options) > 0 && !bytes.Equal(r.Options, []byte("null")) {
		req.Options = runtime.RawExtension{Raw: r.Options}
	}
	if r.parsed {
		switch {
		case r.objectBad:
			return nil, badRequest("request.object must be a JSON object")
		case r.objectErr != nil:
			return nil, badRequest("request.object: %v", r.objectErr)
		case r.oldObjBad:
			return nil, badRequest("request.oldObject must be a JSON object")
		case r.oldObjErr != nil:
			return nil, badRequest("request.oldObject: %v", r.oldObjErr)
		}
		req.Object, req.OldObject = r.object, r.oldObject
		return &Review{APIVersion: w.APIVersion, UID: r.UID, Request: req}, nil
	}
	var err error
	if req.Object, err = decodeObject(r.Object, "request.object"); err != nil {
		return nil, err
	}
	if req.OldObject, err = decodeObject(r.OldObject, "request.oldObject"); err != nil {
		return nil, err
	}
	return &Review{APIVersion: w.APIVersion, UID: r.UID, Request: req}, nil
}

func decodeObject(raw json.RawMessage, field string) (map[string]any, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, badRequest("%s must be a JSON object", field)
	}
	m, err := parseObject(raw)
	if err != nil {
		return nil, badRequest("%s: %v", field, err)
	}
	return m, nil
}

// Response is what the gateway answers to one review.
type Response struct {
	Allowed bool
	// Status is set on a denial.
	Status   *metav1.Status
	Warnings []string
	// AuditAnnotations carry the evaluator's keys; Encode maps them to keys
	// the apiserver keeps (see WebhookAuditKey).
	AuditAnnotations []evaluator.AuditAnnotation
	// Patch is an RFC 6902 JSON patch to request.object; nil when the
	// object is not changed. It is sent with patchType JSONPatch.
	Patch []byte
}

// Encode writes the AdmissionReview answering rev.
func Encode(apiVersion string, uid types.UID, resp Response) ([]byte, error) {
	var annotations map[string]string
	if len(resp.AuditAnnotations) > 0 {
		annotations = make(map[string]string, len(resp.AuditAnnotations))
		for _, a := range resp.AuditAnnotations {
			annotations[WebhookAuditKey(a.Key)] = a.Value
		}
	}
	var out any
	switch apiVersion {
	case V1:
		r := &admissionv1.AdmissionResponse{
			UID: uid, Allowed: resp.Allowed, Result: resp.Status,
			Warnings: resp.Warnings, AuditAnnotations: annotations,
		}
		if len(resp.Patch) > 0 {
			pt := admissionv1.PatchTypeJSONPatch
			r.Patch, r.PatchType = resp.Patch, &pt
		}
		out = &admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: V1, Kind: "AdmissionReview"}, Response: r}
	case V1beta1:
		r := &admissionv1beta1.AdmissionResponse{
			UID: uid, Allowed: resp.Allowed, Result: resp.Status,
			Warnings: resp.Warnings, AuditAnnotations: annotations,
		}
		if len(resp.Patch) > 0 {
			pt := admissionv1beta1.PatchTypeJSONPatch
			r.Patch, r.PatchType = resp.Patch, &pt
		}
		out = &admissionv1beta1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: V1beta1, Kind: "AdmissionReview"}, Response: r}
	default:
		return nil, fmt.Errorf("unsupported AdmissionReview version %q", apiVersion)
	}
	return json.Marshal(out)
}
