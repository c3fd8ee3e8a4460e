package evaluator

import (
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DenialStatus renders a denial as the plugin does: admission.NewForbidden
// around the policy message, with the code and reason of the validation's
// reason (422 Invalid when unset) and the message as the only cause.
func DenialStatus(req *Request, d Denial) *metav1.Status {
	r := normalizeRequest(req)
	var message string
	if d.Binding != "" {
		message = fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", d.Policy, d.Binding, d.Message)
	} else {
		message = fmt.Sprintf("ValidatingAdmissionPolicy '%s' denied request: %s", d.Policy, d.Message)
	}
	name := r.Name
	if name == "" {
		name = "Unknown"
		if r.Object != nil {
			u := &unstructured.Unstructured{Object: r.Object}
			if n := u.GetName(); n != "" {
				name = n
			} else if g := u.GetGenerateName(); g != "" {
				name = g
			}
		}
	}
	st := apierrors.NewForbidden(r.RequestResource.GroupResource(), name, errors.New(message)).ErrStatus
	reason := d.Reason
	if len(reason) == 0 {
		reason = metav1.StatusReasonInvalid
	}
	st.Reason = reason
	st.Code = reasonToCode(reason)
	st.Details.Causes = append(st.Details.Causes, metav1.StatusCause{Message: message})
	return &st
}

// reasonToCode mirrors the validating plugin's reasonToCode.
func reasonToCode(r metav1.StatusReason) int32 {
	switch r {
	case metav1.StatusReasonForbidden:
		return http.StatusForbidden
	case metav1.StatusReasonUnauthorized:
		return http.StatusUnauthorized
	case metav1.StatusReasonRequestEntityTooLarge:
		return http.StatusRequestEntityTooLarge
	case metav1.StatusReasonInvalid:
		return http.StatusUnprocessableEntity
	default:
		return http.StatusUnprocessableEntity
	}
}
