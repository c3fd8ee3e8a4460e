package api

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// validName checks a tenant or cluster name, naming the field.
func validName(field, name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fault.InvalidField(field, "%q is not a valid name: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

func validLabels(field string, m map[string]string) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fault.InvalidField(field, "label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(m[k]); len(errs) > 0 {
			return fault.InvalidField(field, "label %q: value %q: %s", k, m[k], strings.Join(errs, "; "))
		}
	}
	return nil
}

// duration parses a Go duration field.
func duration(field, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fault.InvalidField(field, "%q is not a Go duration such as 720h or 30m", s)
	}
	return d, nil
}

// expiresIn turns an optional positive duration into an instant.
func expiresIn(field, s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	d, err := duration(field, s)
	if err != nil {
		return nil, err
	}
	if d <= 0 {
		return nil, fault.InvalidField(field, "must be positive, not %q", s)
	}
	at := time.Now().Add(d)
	return &at, nil
}
