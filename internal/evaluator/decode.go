package evaluator

import (
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// DecodeObject decodes one JSON object into the form Request.Object has,
// with the apimachinery JSON helpers (integers become int64, other numbers
// float64), as the apiserver decodes unstructured objects. "null" and empty
// input give nil. The webhook's own decoder (internal/admission) is held to
// its results.
func DecodeObject(raw []byte) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var m map[string]any
	if err := utiljson.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return m, nil
}
