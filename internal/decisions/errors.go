package decisions

import "errors"

// EINVALID is the code of an Error about a bad query parameter; the admin
// API answers it with 400 (cursor) or 422 naming Field.
const EINVALID = "invalid"

// Error is the package's one coded error type: a query the store refuses.
type Error struct {
	Code string
	// Field is the query parameter at fault: since, until, verdict, limit,
	// continue, bucket.
	Field   string
	Message string
}

func (e *Error) Error() string { return e.Field + ": " + e.Message }

func invalid(field, msg string) error { return &Error{Code: EINVALID, Field: field, Message: msg} }

// ErrorCode returns the code of err if it is an *Error, else "".
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
