package cli

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/portcullis-dev/portcullis/internal/apiclient"
)

// statusError is an error answer of the API as the CLI prints it: the
// message, the reason and the HTTP status, then each cause on a line.
type statusError struct {
	api *apiclient.Error
	// where rewrites a cause's field for the reader (apply maps
	// documents[i] back to files); nil keeps it.
	where func(field string) string
}

func (e *statusError) Unwrap() error { return e.api }

func (e *statusError) Error() string {
	where := e.where
	if where == nil {
		where = func(s string) string { return s }
	}
	reason := string(e.api.Status.Reason)
	if reason == "" {
		reason = http.StatusText(e.api.HTTPStatus)
	}
	msg := e.api.Status.Message
	causes := e.api.Causes()
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
	fmt.Fprintf(&b, "%s (%s, HTTP %d)", where(msg), reason, e.api.HTTPStatus)
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
