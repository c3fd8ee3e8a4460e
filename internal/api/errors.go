package api

import (
	"errors"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/policystore"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

// tenantNotFound is the one answer for a tenant that does not exist and for
// one the caller may not see.
func tenantNotFound(name string) *fault.Error {
	return fault.Errorf(fault.NotFound, "tenant %q not found", name)
}

// status is the Status sent for any error a handler returns, and whether
// the error is the server's (and so logged).
func status(err error) (metav1.Status, bool) {
	var fe *fault.Error
	st, ok := metav1.Status{}, false
	if !errors.As(err, &fe) {
		st, ok = legacyStatus(err)
	}
	if !ok {
		st = fault.Status(err)
	}
	return st, st.Code >= http.StatusInternalServerError
}

// legacyStatus answers the two stores that still have their own error
// types, exactly as the admin API always has. It goes, with its call in
// status, when tenancy and policystore return *fault.Error.
func legacyStatus(err error) (metav1.Status, bool) {
	var (
		te *tenancy.Error
		pe *policystore.Error
	)
	switch {
	case errors.As(err, &te):
		code := te.HTTPStatus()
		reason := map[int]metav1.StatusReason{
			http.StatusUnprocessableEntity: metav1.StatusReasonInvalid,
			http.StatusNotFound:            metav1.StatusReasonNotFound,
			http.StatusConflict:            metav1.StatusReasonAlreadyExists, // tenancy's conflict: a name is taken
			http.StatusUnauthorized:        metav1.StatusReasonUnauthorized,
			http.StatusForbidden:           metav1.StatusReasonForbidden,
			http.StatusServiceUnavailable:  metav1.StatusReasonServiceUnavailable,
		}[code]
		if reason == "" {
			reason = metav1.StatusReasonInternalError
		}
		st := metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure,
			Code: int32(code), Reason: reason, Message: "internal error; it was logged"}
		if code >= http.StatusInternalServerError {
			return st, true
		}
		// Message only: Reason can tell an attacker why a credential failed.
		st.Message = te.Message
		if te.Code == tenancy.CodeInvalid {
			st.Details = &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Message: te.Message}}}
		}
		return st, true
	case errors.As(err, &pe):
		st := *pe.Status()
		st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
		return st, true
	}
	return metav1.Status{}, false
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	st, internal := status(err)
	if internal {
		s.Logger.Error("admin API error", "method", r.Method, "path", r.URL.Path, "status", st.Code, "error", err)
	}
	writeJSON(w, int(st.Code), st)
}
