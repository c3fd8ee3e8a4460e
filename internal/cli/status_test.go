package cli

import (
	"errors"
	"testing"
)

func TestNamingFlags(t *testing.T) {
	flags := map[string]string{"labels": "--labels", "webhookURL": "--webhook-url"}
	withCauses := func(msg string, causes ...Cause) *statusError {
		se := &statusError{Code: 422, Status: Status{Message: msg, Reason: "Invalid"}}
		if len(causes) > 0 {
			se.Status.Details = &struct {
				Name   string  `json:"name,omitempty"`
				Kind   string  `json:"kind,omitempty"`
				Causes []Cause `json:"causes,omitempty"`
			}{Causes: causes}
		}
		return se
	}
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"the message's field", withCauses("webhookURL: the scheme must be https"),
			"--webhook-url: the scheme must be https (Invalid, HTTP 422)"},
		{"a cause's field", withCauses("Cluster \"x\" is invalid", Cause{Field: "labels", Message: "bad key"}, Cause{Field: "name", Message: "too long"}),
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
