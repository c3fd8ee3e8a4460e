package policystore

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// ErrColdUnavailable is returned (wrapped in a *fault.Error with code
// fault.Unavailable) by Cache.Snapshot when a tenant has no snapshot in
// memory and the database cannot be reached. The webhook answers 503 on it,
// so that the apiserver applies the webhook's own failurePolicy; it must
// never evaluate against an empty policy set instead.
var ErrColdUnavailable = errors.New("policy store unavailable and no cached policies for tenant")

// The errors below give, through fault.Status, the Status the apiserver
// sends for the same failure, to the byte.

func notFound(gk schema.GroupKind, name string) *fault.Error {
	return &fault.Error{Code: fault.NotFound, Group: gk.Group, Kind: gk.Kind, Name: name,
		Message: apierrors.NewNotFound(schema.GroupResource{Group: gk.Group, Resource: gk.Kind}, name).Error()}
}

func conflict(gk schema.GroupKind, name, msg string) *fault.Error {
	return &fault.Error{Code: fault.Conflict, Group: gk.Group, Kind: gk.Kind, Name: name,
		Message: fmt.Sprintf("Operation cannot be fulfilled on %s %q: %s", kindLabel(gk), name, msg)}
}

// invalid is a 422 about one object with a cause per bad field, as
// apierrors.NewInvalid builds it.
func invalid(gk schema.GroupKind, name string, errs field.ErrorList) *fault.Error {
	st := apierrors.NewInvalid(gk, name, errs).ErrStatus
	return &fault.Error{Code: fault.Invalid, Message: st.Message, Causes: st.Details.Causes,
		Group: gk.Group, Kind: gk.Kind, Name: name}
}

// invalidInput is a 422 about input that is not (yet) an object, with its
// own message.
func invalidInput(msg string, errs field.ErrorList) *fault.Error {
	return &fault.Error{Code: fault.Invalid, Message: msg, Causes: fieldCauses(errs)}
}

// fieldCauses turns field errors into Status causes as the apiserver does.
func fieldCauses(errs field.ErrorList) []metav1.StatusCause {
	return apierrors.NewInvalid(schema.GroupKind{}, "", errs).ErrStatus.Details.Causes
}

func kindLabel(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}
