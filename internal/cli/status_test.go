package cli

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-dev/portcullis/internal/apiclient"
)

// apiAnswer is an error answer of the API as the client returns it.
func apiAnswer(code int, reason, msg string, causes ...metav1.StatusCause) *statusError {
	st := metav1.Status{Reason: metav1.StatusReason(reason), Message: msg}
	if len(causes) > 0 {
		st.Details = &metav1.StatusDetails{Causes: causes}
	}
	return &statusError{api: apiclient.NewError(code, st)}
}

func TestNamingFlags(t *testing.T) {
	flags := map[string]string{"labels": "--labels", "webhookURL": "--webhook-url"}
	withCauses := func(msg string, causes ...metav1.StatusCause) *statusError {
		return apiAnswer(422, "Invalid", msg, causes...)
	}
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"the message's field", withCauses("webhookURL: the scheme must be https"),
			"--webhook-url: the scheme must be https (Invalid, HTTP 422)"},
		{"a cause's field", withCauses("Cluster \"x\" is invalid", metav1.StatusCause{Field: "labels", Message: "bad key"}, metav1.StatusCause{Field: "name", Message: "too long"}),
			"Cluster \"x\" is invalid (Invalid, HTTP 422)\n  --labels: bad key\n  name: too long"},
		{"a field inside the text", withCauses("the labels: are kept"), "the labels: are kept (Invalid, HTTP 422)"},
		{"a longer field with the same start", withCauses("labelsSelector: bad"), "labelsSelector: bad (Invalid, HTTP 422)"},
		{"not an answer of the API", errors.New("labels: bad"), "labels: bad"},
	}
	for _, c := range cases {
		if got := namingFlags(c.err, flags).Error(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// A Status that already names files (apply) keeps its naming.
	se := withCauses("documents[0]: bad")
	se.where = func(s string) string { return "file.yaml" }
	if got := namingFlags(se, flags).Error(); got != "file.yaml (Invalid, HTTP 422)" {
		t.Errorf("a Status that names files: %q", got)
	}
}
