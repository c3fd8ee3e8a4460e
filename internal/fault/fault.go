// Package fault is Portcullis' one error vocabulary: a Code, an Error that
// carries it, and Status, the one place where an error becomes the
// Kubernetes Status that the admin API and the webhook send.
//
// Inner layers return *Error (or wrap one with %w); the boundary calls
// Status and logs once. An Error's Message is written for the caller and is
// always safe to send; its Reason is for logs and metrics only (why a
// credential failed, for example) and never leaves the process.
package fault

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Code classifies an Error. Each code has one HTTP status and one Status
// reason (see HTTPStatus and StatusReason).
type Code string

// The codes. Two share 409, as in Kubernetes: AlreadyExists when a name is
// taken, Conflict when the caller's view is stale (resourceVersion).
const (
	BadRequest           Code = "bad_request"            // 400
	Unauthenticated      Code = "unauthenticated"        // 401
	Forbidden            Code = "forbidden"              // 403
	NotFound             Code = "not_found"              // 404: absent, or another tenant's
	MethodNotAllowed     Code = "method_not_allowed"     // 405
	Misdirected          Code = "misdirected"            // 421: another deployment serves it
	AlreadyExists        Code = "already_exists"         // 409: the name is taken
	Conflict             Code = "conflict"               // 409: stale resourceVersion
	TooLarge             Code = "too_large"              // 413
	UnsupportedMediaType Code = "unsupported_media_type" // 415
	Invalid              Code = "invalid"                // 422: see Error.Causes
	TooManyRequests      Code = "too_many_requests"      // 429
	Internal             Code = "internal"               // 500
	Unavailable          Code = "unavailable"            // 503
	Timeout              Code = "timeout"                // 504
)

var codes = map[Code]struct {
	status int
	reason metav1.StatusReason
}{
	BadRequest:           {http.StatusBadRequest, metav1.StatusReasonBadRequest},
	Unauthenticated:      {http.StatusUnauthorized, metav1.StatusReasonUnauthorized},
	Forbidden:            {http.StatusForbidden, metav1.StatusReasonForbidden},
	NotFound:             {http.StatusNotFound, metav1.StatusReasonNotFound},
	MethodNotAllowed:     {http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed},
	Misdirected:          {http.StatusMisdirectedRequest, "Misdirected"}, // Kubernetes names no reason for 421; the apiserver reads only the code
	AlreadyExists:        {http.StatusConflict, metav1.StatusReasonAlreadyExists},
	Conflict:             {http.StatusConflict, metav1.StatusReasonConflict},
	TooLarge:             {http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge},
	UnsupportedMediaType: {http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType},
	Invalid:              {http.StatusUnprocessableEntity, metav1.StatusReasonInvalid},
	TooManyRequests:      {http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests},
	Internal:             {http.StatusInternalServerError, metav1.StatusReasonInternalError},
	Unavailable:          {http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable},
	Timeout:              {http.StatusGatewayTimeout, metav1.StatusReasonTimeout},
}

// HTTPStatus is the HTTP status of a code; 500 for an unknown one.
func (c Code) HTTPStatus() int {
	if v, ok := codes[c]; ok {
		return v.status
	}
	return http.StatusInternalServerError
}

// StatusReason is the Kubernetes Status reason of a code.
func (c Code) StatusReason() metav1.StatusReason {
	if v, ok := codes[c]; ok {
		return v.reason
	}
	return metav1.StatusReasonInternalError
}

// Error is the one coded error type.
type Error struct {
	Code Code
	// Message is sent to the caller as the Status message.
	Message string
	// Reason says why, for logs and metrics; never sent. Authentication
	// uses it: telling a caller that a credential exists but was revoked
	// would help an attacker.
	Reason string
	// Causes name the bad fields of an Invalid or BadRequest error.
	Causes []metav1.StatusCause
	// Group, Kind and Name identify the object the error is about, when
	// there is one; they become the Status details.
	Group, Kind, Name string
	// Err is the underlying cause, for errors.Is/As and logs; never sent.
	Err error
}

// Error is the text for logs: the message, then the reason and the cause.
func (e *Error) Error() string {
	s := e.Message
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error with a formatted message around err, which is kept
// for logs and errors.Is but never sent.
func Wrap(err error, code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// InvalidField is a 422 about one field of a request (a query parameter or
// a body field), with that field as its one cause.
func InvalidField(field, format string, args ...any) *Error {
	detail := fmt.Sprintf(format, args...)
	return &Error{Code: Invalid, Message: field + ": " + detail,
		Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: field, Message: detail}}}
}

// ErrorCode returns the Code of err: "" for nil, the code of the *Error it
// is or wraps, Internal otherwise.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// ErrorReason returns the log-only reason of err's *Error, if any.
func ErrorReason(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// HTTPStatus returns the HTTP status Status would give err.
func HTTPStatus(err error) int { return int(Status(err).Code) }

// internalMessage replaces the text of any error that is not an *Error:
// such text was not written for the caller and may hold internal detail.
const internalMessage = "internal error; it was logged"

// Status turns any error into the Status sent to a client: an *Error
// (found with errors.As) by its code, message, causes and details; a
// context deadline as 504 and a cancellation as 499; anything else as a
// 500 whose text is not shown.
func Status(err error) metav1.Status {
	var e *Error
	switch {
	case errors.As(err, &e):
		st := newStatus(e.Code.HTTPStatus(), e.Code.StatusReason(), e.Message)
		if e.Message == "" {
			st.Message = internalMessage
		}
		if e.Name != "" || e.Kind != "" || len(e.Causes) > 0 {
			st.Details = &metav1.StatusDetails{Name: e.Name, Group: e.Group, Kind: e.Kind, Causes: e.Causes}
		}
		return st
	case errors.Is(err, context.DeadlineExceeded):
		return newStatus(http.StatusGatewayTimeout, metav1.StatusReasonTimeout, "the request took too long; retry")
	case errors.Is(err, context.Canceled):
		// 499 is nginx's "client closed request": nobody reads this answer,
		// but logs and metrics tell it apart from a server fault.
		return newStatus(499, "Canceled", "the client went away")
	}
	return newStatus(http.StatusInternalServerError, metav1.StatusReasonInternalError, internalMessage)
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

// FromStatus is the inverse of Status: the *Error that a client reads from
// a Status the admin API or the webhook sent. The code is the one whose
// reason the Status names, else the one of its HTTP status (409 without a
// known reason is Conflict); a status no code has becomes BadRequest below
// 500 and Internal from 500 on.
func FromStatus(st metav1.Status) *Error {
	e := &Error{Code: codeOf(int(st.Code), st.Reason), Message: st.Message}
	if d := st.Details; d != nil {
		e.Group, e.Kind, e.Name, e.Causes = d.Group, d.Kind, d.Name, d.Causes
	}
	return e
}

func codeOf(status int, reason metav1.StatusReason) Code {
	var byStatus Code
	for c, v := range codes {
		if v.status != status {
			continue
		}
		if v.reason == reason {
			return c
		}
		// AlreadyExists and Conflict share 409: a 409 of no known reason
		// is a stale view, as kube-apiserver's clients read it.
		if byStatus == "" || c == Conflict {
			byStatus = c
		}
	}
	switch {
	case byStatus != "":
		return byStatus
	case status >= 400 && status < 500:
		return BadRequest
	}
	return Internal
}
