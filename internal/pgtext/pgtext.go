// Package pgtext finds the text PostgreSQL cannot store, so that the
// stores can refuse it as invalid input instead of failing the write.
package pgtext

import (
	"bytes"
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Errors returns a field error for every string (key or value) in v, a
// value decoded from JSON, that holds a NUL character. PostgreSQL stores
// neither text nor jsonb with one, so such input must be refused as
// invalid rather than fail the write. (encoding/json has already replaced
// invalid UTF-8 with U+FFFD.)
func Errors(path *field.Path, v any) field.ErrorList {
	var errs field.ErrorList
	switch v := v.(type) {
	case string:
		if strings.IndexByte(v, 0) >= 0 {
			errs = append(errs, field.Invalid(path, field.OmitValueType{}, "must not contain a NUL character"))
		}
	case map[string]any:
		for k, e := range v {
			if strings.IndexByte(k, 0) >= 0 {
				at := path
				if at == nil {
					at = field.NewPath("")
				}
				errs = append(errs, field.Invalid(at, field.OmitValueType{}, "a key must not contain a NUL character"))
				continue
			}
			errs = append(errs, Errors(path.Child(k), e)...)
		}
	case []any:
		for i, e := range v {
			errs = append(errs, Errors(path.Index(i), e)...)
		}
	}
	return errs
}

// JSONErrors is Errors for a JSON document. In JSON a NUL can only
// be written as the escape \u0000, so a document without it is decoded no
// further.
func JSONErrors(js []byte) (field.ErrorList, error) {
	if !bytes.Contains(js, []byte(`\u0000`)) {
		return nil, nil
	}
	var generic any
	if err := json.Unmarshal(js, &generic); err != nil {
		return nil, err
	}
	return Errors(nil, generic), nil
}
