package fault

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStatus(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		code    int32
		reason  metav1.StatusReason
		message string
	}{
		{"not found", Errorf(NotFound, "tenant %q not found", "a"), 404, metav1.StatusReasonNotFound, `tenant "a" not found`},
		{"wrapped", fmt.Errorf("loading: %w", Errorf(Forbidden, "no")), 403, metav1.StatusReasonForbidden, "no"},
		{"name taken", Errorf(AlreadyExists, "taken"), 409, metav1.StatusReasonAlreadyExists, "taken"},
		{"stale", Errorf(Conflict, "stale"), 409, metav1.StatusReasonConflict, "stale"},
		{"reason is not sent", &Error{Code: Unauthenticated, Message: "authentication failed", Reason: "revoked"}, 401, metav1.StatusReasonUnauthorized, "authentication failed"},
		{"cause is not sent", Wrap(errors.New("pq: secret detail"), Unavailable, "database unreachable"), 503, metav1.StatusReasonServiceUnavailable, "database unreachable"},
		{"internal without message", &Error{Code: Internal, Err: errors.New("secret")}, 500, metav1.StatusReasonInternalError, internalMessage},
		{"plain error", errors.New("secret detail"), 500, metav1.StatusReasonInternalError, internalMessage},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), 504, metav1.StatusReasonTimeout, "the request took too long; retry"},
		{"canceled", context.Canceled, 499, "Canceled", "the client went away"},
		{"unknown code", &Error{Code: "nonsense", Message: "m"}, 500, metav1.StatusReasonInternalError, "m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := Status(tc.err)
			if st.Code != tc.code || st.Reason != tc.reason || st.Message != tc.message {
				t.Errorf("Status = %d %s %q, want %d %s %q", st.Code, st.Reason, st.Message, tc.code, tc.reason, tc.message)
			}
			if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure {
				t.Errorf("Status type = %+v", st.TypeMeta)
			}
			if HTTPStatus(tc.err) != int(tc.code) {
				t.Errorf("HTTPStatus = %d, want %d", HTTPStatus(tc.err), tc.code)
			}
		})
	}
}

func TestEveryCodeHasAStatus(t *testing.T) {
	for code, v := range codes {
		if v.status < 400 || v.reason == "" {
			t.Errorf("%s: %d %q", code, v.status, v.reason)
		}
		if code.HTTPStatus() != v.status || code.StatusReason() != v.reason {
			t.Errorf("%s: accessors disagree with the table", code)
		}
	}
	if Code("nonsense").HTTPStatus() != http.StatusInternalServerError {
		t.Error("an unknown code is not 500")
	}
}

func TestInvalidField(t *testing.T) {
	st := Status(InvalidField("limit", "must be between %d and %d", 1, 1000))
	if st.Code != 422 || st.Message != "limit: must be between 1 and 1000" {
		t.Fatalf("Status = %d %q", st.Code, st.Message)
	}
	if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "limit" ||
		st.Details.Causes[0].Message != "must be between 1 and 1000" || st.Details.Causes[0].Type != metav1.CauseTypeFieldValueInvalid {
		t.Fatalf("details = %+v", st.Details)
	}
}

func TestErrorCodeAndReason(t *testing.T) {
	if ErrorCode(nil) != "" || ErrorCode(errors.New("x")) != Internal {
		t.Error("ErrorCode of nil or a plain error")
	}
	err := fmt.Errorf("auth: %w", &Error{Code: Unauthenticated, Message: "m", Reason: "expired"})
	if ErrorCode(err) != Unauthenticated || ErrorReason(err) != "expired" {
		t.Errorf("ErrorCode/Reason = %s %s", ErrorCode(err), ErrorReason(err))
	}
	if got := err.Error(); got != "auth: m (expired)" {
		t.Errorf("Error() = %q", got)
	}
	inner := errors.New("inner")
	if !errors.Is(Wrap(inner, Internal, "x"), inner) {
		t.Error("Wrap loses the cause")
	}
}

// FromStatus reads back, for every code, what Status sent: the code, the
// message, the causes and the object.
func TestFromStatusRoundTrip(t *testing.T) {
	for c := range codes {
		t.Run(string(c), func(t *testing.T) {
			sent := &Error{Code: c, Message: "m", Group: "g", Kind: "K", Name: "n",
				Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.x", Message: "bad"}}}
			got := FromStatus(Status(sent))
			if got.Code != c || got.Message != "m" || got.Group != "g" || got.Kind != "K" || got.Name != "n" ||
				len(got.Causes) != 1 || got.Causes[0] != sent.Causes[0] {
				t.Errorf("FromStatus(Status(%+v)) = %+v", sent, got)
			}
		})
	}
}

func TestFromStatusForeign(t *testing.T) {
	for _, tc := range []struct {
		name   string
		code   int32
		reason metav1.StatusReason
		want   Code
	}{
		{"409 of no reason is a stale view", 409, "", Conflict},
		{"409 AlreadyExists", 409, metav1.StatusReasonAlreadyExists, AlreadyExists},
		{"known status, unknown reason", 404, "Gone", NotFound},
		{"a proxy's 4xx", 418, "", BadRequest},
		{"a proxy's 502", 502, "", Internal},
		{"canceled", 499, "Canceled", BadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FromStatus(metav1.Status{Code: tc.code, Reason: tc.reason, Message: "m"}); got.Code != tc.want || got.Message != "m" {
				t.Errorf("FromStatus(%d %s) = %s %q, want %s", tc.code, tc.reason, got.Code, got.Message, tc.want)
			}
		})
	}
}
