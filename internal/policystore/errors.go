package policystore

import (
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Error codes. The admin API maps them to HTTP statuses in one place; the
// webhook maps them to an AdmissionResponse and never shows internal text.
const (
	ENOTFOUND    = "not_found"   // 404
	ECONFLICT    = "conflict"    // 409: stale resourceVersion
	EINVALID     = "invalid"     // 422: see Error.Status
	EUNAVAILABLE = "unavailable" // 503: no snapshot and no database
	EINTERNAL    = "internal"    // 500
)

// Error is the package's one coded error type.
type Error struct {
	Code    string
	Message string
	// Causes name each bad field of an invalid object (EINVALID only).
	Causes field.ErrorList
	// GroupKind and Name identify the object the error is about, when known.
	GroupKind schema.GroupKind
	Name      string
	// Err is the underlying cause, if any, for errors.Is and logs.
	Err error
	// causeObjects[i], when set, names the object Causes[i] is about (kind
	// and name), for errors about several objects, whose causes' fields
	// only give the object's index.
	causeObjects []string
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ErrorCode returns the code of err if it is (or wraps) an *Error, else
// EINTERNAL; nil gives "".
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrColdUnavailable is returned (wrapped in an *Error with code
// EUNAVAILABLE) by Cache.Snapshot when a tenant has no snapshot in memory
// and the database cannot be reached. The webhook answers 503 on it, so that
// the apiserver applies the webhook's own failurePolicy; it must never
// evaluate against an empty policy set instead.
var ErrColdUnavailable = errors.New("policy store unavailable and no cached policies for tenant")

func notFound(gk schema.GroupKind, name string) *Error {
	return &Error{Code: ENOTFOUND, GroupKind: gk, Name: name,
		Message: apierrors.NewNotFound(schema.GroupResource{Group: gk.Group, Resource: gk.Kind}, name).Error()}
}

func conflict(gk schema.GroupKind, name, msg string) *Error {
	return &Error{Code: ECONFLICT, GroupKind: gk, Name: name,
		Message: fmt.Sprintf("Operation cannot be fulfilled on %s %q: %s", kindLabel(gk), name, msg)}
}

func invalid(gk schema.GroupKind, name string, errs field.ErrorList) *Error {
	return &Error{Code: EINVALID, GroupKind: gk, Name: name, Causes: errs,
		Message: apierrors.NewInvalid(gk, name, errs).Error()}
}

func kindLabel(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}

// Status renders the error as the Kubernetes Status the apiserver would send:
// for EINVALID a 422 with one cause per bad field, exactly as
// apierrors.NewInvalid builds it.
func (e *Error) Status() *metav1.Status {
	switch e.Code {
	case EINVALID:
		s := apierrors.NewInvalid(e.GroupKind, e.Name, e.Causes).ErrStatus
		// The same text as NewInvalid's for one object; an error about
		// several objects (ApplyAll) carries its own, which names each.
		s.Message = e.Message
		for i := range s.Details.Causes {
			if i < len(e.causeObjects) && e.causeObjects[i] != "" {
				s.Details.Causes[i].Message = e.causeObjects[i] + ": " + s.Details.Causes[i].Message
			}
		}
		return &s
	case ENOTFOUND:
		return status(http.StatusNotFound, metav1.StatusReasonNotFound, e)
	case ECONFLICT:
		return status(http.StatusConflict, metav1.StatusReasonConflict, e)
	case EUNAVAILABLE:
		return status(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, e)
	default:
		return &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
			Reason: metav1.StatusReasonInternalError, Message: "internal error"}
	}
}

func status(code int32, reason metav1.StatusReason, e *Error) *metav1.Status {
	s := &metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: e.Message}
	if e.Name != "" || e.GroupKind.Kind != "" {
		s.Details = &metav1.StatusDetails{Name: e.Name, Group: e.GroupKind.Group, Kind: e.GroupKind.Kind}
	}
	return s
}
