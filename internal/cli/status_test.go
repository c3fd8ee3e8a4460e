package cli

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
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

// What the CLI prints for each kind of error answer, through the API
// client: a Status (with its causes), a proxy's page, an
// empty answer. The exit code of an error answer is 1.
func TestErrorAnswersPrinted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"a Status with causes", 422,
			`{"kind":"Status","status":"Failure","reason":"Invalid","code":422,"message":"Cluster \"x\" is invalid",` +
				`"details":{"causes":[{"reason":"FieldValueInvalid","field":"labels","message":"bad key"},{"field":"name","message":"too long"}]}}`,
			"admin whoami: Cluster \"x\" is invalid (Invalid, HTTP 422)\n  labels: bad key\n  name: too long\n"},
		{"a proxy's page", 502, "<html>bad gateway</html>\n", "admin whoami: <html>bad gateway</html> (Bad Gateway, HTTP 502)\n"},
		{"an empty answer", 503, "", "admin whoami: Service Unavailable (Service Unavailable, HTTP 503)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			env := map[string]string{"PORTCULLIS_SERVER": srv.URL, "PORTCULLIS_TOKEN": "t", "HOME": t.TempDir()}
			code, _, stderr := runCLI(t, env, "", "whoami")
			if code != exitFailure || stderr != tc.want {
				t.Errorf("exit %d, stderr %q\nwant %q", code, stderr, tc.want)
			}
		})
	}
}
