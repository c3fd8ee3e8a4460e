package webhook

import (
	"strings"

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

// failureCause says why a binding's failurePolicy decided. BindingResult
// carries the cause only as its Timeout flag and its error text, so the
// text is matched against the evaluator's own wording (eval.go
// unknownNamespaceError, cel.go compilation errors); TestFailureCauses runs
// the real evaluator to keep the two in step.
func failureCause(b *evaluator.BindingResult) string {
	switch {
	case b.Timeout:
		return causeTimeout
	case strings.Contains(b.Error, "the namespace inventory lacks it"):
		return causeUnknownNamespace
	case strings.Contains(b.Error, "compilation error") || strings.Contains(b.Error, "fails to compile"):
		return causeCompileError
	}
	return causeError
}
