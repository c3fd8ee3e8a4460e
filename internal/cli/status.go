package cli

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Status is the error body of every API error (a Kubernetes Status).
type Status struct {
	Kind    string `json:"kind"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Reason  string `json:"reason"`
	Code    int    `json:"code"`
	Details *struct {
		Name   string  `json:"name,omitempty"`
		Kind   string  `json:"kind,omitempty"`
		Causes []Cause `json:"causes,omitempty"`
	} `json:"details,omitempty"`
}

// Cause is one field error of a Status.
type Cause struct {
	Type    string `json:"reason,omitempty"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// statusError is an error answer of the API.
type statusError struct {
	Code   int
	Status Status
	// where rewrites a cause's field for the reader (apply maps
	// documents[i] back to files); nil keeps it.
	where func(field string) string
}

func (e *statusError) causes() []Cause {
	if e.Status.Details == nil {
		return nil
	}
	return e.Status.Details.Causes
}

func (e *statusError) Error() string {
	where := e.where
	if where == nil {
		where = func(s string) string { return s }
	}
	reason := e.Status.Reason
	if reason == "" {
		reason = http.StatusText(e.Code)
	}
	msg := e.Status.Message
	causes := e.causes()
	// A one-cause Status repeats the cause as its message: say it once.
	if len(causes) == 1 && causes[0].Field != "" && msg == causes[0].Field+": "+causes[0].Message {
		causes = nil
	}
	// A message that goes on to repeat a cause keeps only its summary
	// ("1 of the 2 documents is invalid; nothing was written"); the causes
	// follow, one per line.
	for _, c := range causes {
		at := strings.Index(msg, c.Field)
		if c.Field == "" || at < 0 {
			continue
		}
		if colon := strings.Index(msg, ": "); colon > 0 && colon < at {
			msg = msg[:colon]
		}
		break
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s, HTTP %d)", where(msg), reason, e.Code)
	for _, c := range causes {
		b.WriteString("\n  ")
		if c.Field != "" {
			b.WriteString(where(c.Field) + ": ")
		}
		b.WriteString(where(c.Message))
	}
	return b.String()
}

// namingFlags makes an error answer about the request's fields name the
// command's flags instead, as the user typed them: the API says
// concurrentEvaluations, the user gave --concurrent-evaluations. flags maps
// each API field to its flag; a field is rewritten only where it starts the
// text, as a Status and its causes name it.
func namingFlags(err error, flags map[string]string) error {
	var se *statusError
	if !errors.As(err, &se) || se.where != nil {
		return err
	}
	se.where = func(s string) string {
		for field, flag := range flags {
			if rest, ok := strings.CutPrefix(s, field); ok && (rest == "" || strings.HasPrefix(rest, ": ")) {
				return flag + rest
			}
		}
		return s
	}
	return err
}
