package pgtext

import (
	"strings"
	"testing"
)

func TestJSONErrors(t *testing.T) {
	tests := []struct {
		name string
		js   string
		want []string // "field: detail" of each error
	}{
		{"no NUL", `{"a": "b", "c": ["d"]}`, nil},
		{"an escaped backslash and u0000 is not a NUL", `{"a": "\\u0000"}`, nil},
		{"a value", `{"metadata": {"annotations": {"a": "x\u0000"}}}`,
			[]string{"metadata.annotations.a: must not contain a NUL character"}},
		{"in a list", `{"a": ["ok", "\u0000"]}`, []string{"a[1]: must not contain a NUL character"}},
		{"a key", `{"a": {"\u0000": 1}}`, []string{"a: a key must not contain a NUL character"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs, err := JSONErrors([]byte(tt.js))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range errs {
				got = append(got, e.Field+": "+e.Detail)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("errors = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestJSONErrorsBadJSON(t *testing.T) {
	if _, err := JSONErrors([]byte(`{"a": "\u0000"`)); err == nil {
		t.Fatal("no error for truncated JSON")
	}
}
