package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/fault"
)

// apiError is an error raised by the API layer itself.
type apiError struct {
	code   int
	reason metav1.StatusReason
	msg    string
	causes []metav1.StatusCause
	err    error // logged, never sent
}

func (e *apiError) Error() string { return e.msg }
func (e *apiError) Unwrap() error { return e.err }

func (e *apiError) status() metav1.Status {
	st := newStatus(e.code, e.reason, e.msg)
	if len(e.causes) > 0 {
		st.Details = &metav1.StatusDetails{Causes: e.causes}
	}
	return st
}

func badRequest(format string, args ...any) *apiError {
	return &apiError{code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest, msg: fmt.Sprintf(format, args...)}
}

// invalidField is a 422 about one field of the request (a query parameter
// or a body field), with that field as the cause.
func invalidField(field, format string, args ...any) *apiError {
	detail := fmt.Sprintf(format, args...)
	return &apiError{code: http.StatusUnprocessableEntity, reason: metav1.StatusReasonInvalid,
		msg:    field + ": " + detail,
		causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: field, Message: detail}}}
}

func notFound(format string, args ...any) *apiError {
	return &apiError{code: http.StatusNotFound, reason: metav1.StatusReasonNotFound, msg: fmt.Sprintf(format, args...)}
}

// tenantNotFound is the one answer for a tenant that does not exist and for
// one the caller may not see.
func tenantNotFound(name string) *apiError { return notFound("tenant %q not found", name) }

func forbidden(format string, args ...any) *apiError {
	return &apiError{code: http.StatusForbidden, reason: metav1.StatusReasonForbidden, msg: fmt.Sprintf(format, args...)}
}

func unavailable(msg string, err error) *apiError {
	return &apiError{code: http.StatusServiceUnavailable, reason: metav1.StatusReasonServiceUnavailable, msg: msg, err: err}
}

// status maps any error a handler returns to the Status sent. This is the
// one place where the stores' error codes become HTTP statuses.
func status(err error) (metav1.Status, bool) {
	var (
		ae *apiError
		fe *fault.Error
		de *decisions.Error
	)
	switch {
	case errors.As(err, &ae):
		return ae.status(), ae.code >= 500
	case errors.As(err, &fe):
		st := fault.Status(fe)
		return st, st.Code >= 500
	case errors.As(err, &de):
		return invalidField(de.Field, "%s", de.Message).status(), false
	case errors.Is(err, context.DeadlineExceeded):
		return newStatus(http.StatusGatewayTimeout, metav1.StatusReasonTimeout, "the request took too long; retry"), true
	case errors.Is(err, context.Canceled):
		return newStatus(499, "Canceled", "the client went away"), false
	}
	return newStatus(http.StatusInternalServerError, metav1.StatusReasonInternalError, "internal error; it was logged"), true
}

func reasonFor(code int) metav1.StatusReason {
	switch code {
	case http.StatusBadRequest:
		return metav1.StatusReasonBadRequest
	case http.StatusUnauthorized:
		return metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusNotFound:
		return metav1.StatusReasonNotFound
	case http.StatusConflict:
		return metav1.StatusReasonAlreadyExists
	case http.StatusUnprocessableEntity:
		return metav1.StatusReasonInvalid
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	}
	return metav1.StatusReasonInternalError
}

func newStatus(code int, reason metav1.StatusReason, msg string) metav1.Status {
	return metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure,
		Code:     int32(code),
		Reason:   reason,
		Message:  msg,
	}
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	st, internal := status(err)
	if internal {
		s.Logger.Error("admin API error", "method", r.Method, "path", r.URL.Path, "status", st.Code, "error", err)
	}
	writeJSON(w, int(st.Code), st)
}
