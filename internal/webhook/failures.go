package webhook

import (
	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// Causes of a failurePolicy decision, the cause label of the fail-open and
// fail-closed counters.
const (
	causeTimeout          = "timeout"
	causeUnknownNamespace = "unknown_namespace"
	causeCompileError     = "compile_error"
	causeError            = "error"
)

// failureCause says why a binding's failurePolicy decided, from the cause
// the evaluator set where the error was made. The label keeps the causes an
// operator acts on apart; configuration errors, missing params and runtime
// errors share "error".
func failureCause(b *evaluator.BindingResult) string {
	switch b.Cause {
	case evaluator.CauseTimeout:
		return causeTimeout
	case evaluator.CauseUnknownNamespace:
		return causeUnknownNamespace
	case evaluator.CauseCompileError:
		return causeCompileError
	}
	return causeError
}
