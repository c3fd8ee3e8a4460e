package evaluator

import (
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// RequestFromAdmission converts an admission.k8s.io/v1 AdmissionRequest.
// Objects given as raw JSON are decoded with the apimachinery JSON helpers
// (integers become int64, other numbers float64), as the apiserver decodes
// unstructured objects.
func RequestFromAdmission(r *admissionv1.AdmissionRequest) (*Request, error) {
	if r == nil {
		return nil, errors.New("admission request is nil")
	}
	req := &Request{
		UID:                string(r.UID),
		Kind:               schema.GroupVersionKind{Group: r.Kind.Group, Version: r.Kind.Version, Kind: r.Kind.Kind},
		Resource:           schema.GroupVersionResource{Group: r.Resource.Group, Version: r.Resource.Version, Resource: r.Resource.Resource},
		SubResource:        r.SubResource,
		RequestSubResource: r.RequestSubResource,
		Name:               r.Name,
		Namespace:          r.Namespace,
		Operation:          admissionregistrationv1.OperationType(r.Operation),
		UserInfo:           r.UserInfo,
		Options:            r.Options,
	}
	req.RequestKind = req.Kind
	if r.RequestKind != nil {
		req.RequestKind = schema.GroupVersionKind{Group: r.RequestKind.Group, Version: r.RequestKind.Version, Kind: r.RequestKind.Kind}
	}
	req.RequestResource = req.Resource
	if r.RequestResource != nil {
		req.RequestResource = schema.GroupVersionResource{Group: r.RequestResource.Group, Version: r.RequestResource.Version, Resource: r.RequestResource.Resource}
	} else {
		req.RequestSubResource = r.SubResource
	}
	if r.DryRun != nil {
		req.DryRun = *r.DryRun
	}
	var err error
	if req.Object, err = decodeObject(r.Object); err != nil {
		return nil, fmt.Errorf("decoding object: %w", err)
	}
	if req.OldObject, err = decodeObject(r.OldObject); err != nil {
		return nil, fmt.Errorf("decoding oldObject: %w", err)
	}
	return req, nil
}

// DecodeObject decodes one JSON object the way the evaluator expects it.
// "null" and empty input give nil.
func DecodeObject(raw []byte) (map[string]any, error) {
	return decodeObject(runtime.RawExtension{Raw: raw})
}

func decodeObject(ext runtime.RawExtension) (map[string]any, error) {
	if ext.Object != nil {
		return runtime.DefaultUnstructuredConverter.ToUnstructured(ext.Object)
	}
	if len(ext.Raw) == 0 || string(ext.Raw) == "null" {
		return nil, nil
	}
	var m map[string]any
	if err := utiljson.Unmarshal(ext.Raw, &m); err != nil {
		return nil, err
	}
	return m, nil
}
