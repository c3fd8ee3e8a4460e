package apiclient

import (
	"encoding/json"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// Error is an error answer of the admin API. It unwraps to the
// *fault.Error its Status reads as (fault.FromStatus), so that callers ask
// errors.As or fault.ErrorCode what went wrong, as the server's own code
// does.
type Error struct {
	// HTTPStatus is the answer's status as received: a proxy in front of
	// the API may send one that no fault code has.
	HTTPStatus int
	// Status is the answer's body; for a body that is no Status (a
	// proxy's page), one whose message is the body's text, with no reason.
	Status metav1.Status
	fault  *fault.Error
}

func (e *Error) Error() string { return e.Status.Message }

// Unwrap returns the error as fault reads it.
func (e *Error) Unwrap() error { return e.fault }

// Fault is the error as fault reads it: code, message, causes and object.
func (e *Error) Fault() *fault.Error { return e.fault }

// Causes are the Status's field errors.
func (e *Error) Causes() []metav1.StatusCause {
	if e.Status.Details == nil {
		return nil
	}
	return e.Status.Details.Causes
}

// decodeError reads an error answer: the one place where a Status from
// the API becomes an error of this process.
func decodeError(status int, body []byte) *Error {
	var st metav1.Status
	if json.Unmarshal(body, &st) != nil || st.Message == "" {
		msg := strings.TrimSpace(string(body))
		if msg == "" {
			msg = http.StatusText(status)
		}
		st = metav1.Status{Status: metav1.StatusFailure, Message: msg}
	}
	return NewError(status, st)
}

// NewError is the error of an answer with that HTTP status and Status, as
// Do returns it; tests and fakes of the API make theirs with it.
func NewError(status int, st metav1.Status) *Error {
	// The HTTP status decides, as for any HTTP client; a body's own code
	// may be absent.
	st.Code = int32(status)
	return &Error{HTTPStatus: status, Status: st, fault: fault.FromStatus(st)}
}
