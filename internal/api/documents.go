package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// splitObjects reads a body of Kubernetes objects, as kubectl apply -f
// takes them: multi-document YAML, or JSON (one object, several in a
// stream, or an array). A List (any kind ending in List, with an items
// array, as `kubectl get -o yaml|json` prints) gives its items. Empty and
// comment-only YAML documents are skipped, as kubectl skips them. Each
// object comes back as JSON; list names them in errors: list[i] is the
// i-th object, counted after Lists are expanded.
func splitObjects(body []byte, list string) ([][]byte, error) {
	out, _, err := splitBody(body, list)
	if err == nil && len(out) == 0 {
		return nil, fault.Errorf(fault.BadRequest, "the request body holds no objects: only empty or comment-only documents, or empty Lists")
	}
	return out, err
}

// splitSet is splitObjects for a body that replaces a whole set, where
// none is a true answer (a cluster whose CRDs were all removed): an
// explicit List with no items says so. A body with no List and no object
// (empty, or comments only) is still refused: that is far more often a
// wrong or truncated file than a statement.
func splitSet(body []byte, list string) ([][]byte, error) {
	out, lists, err := splitBody(body, list)
	if err == nil && len(out) == 0 && lists == 0 {
		return nil, fault.Errorf(fault.BadRequest, "the request body holds no objects: send an empty List (kind: List, items: []) to say that there are none")
	}
	return out, err
}

// splitBody splits body into objects and counts the Lists it expanded.
func splitBody(body []byte, list string) ([][]byte, int, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, 0, fault.Errorf(fault.BadRequest, "the request body is empty: send Kubernetes objects as YAML or JSON")
	}
	// As kubectl decides: a body that starts as JSON is JSON.
	if trimmed[0] == '{' || trimmed[0] == '[' {
		chunks, jsonErr := jsonChunks(trimmed)
		if jsonErr != nil {
			return nil, 0, fault.InvalidField(fmt.Sprintf("%s[%d]", list, len(chunks)), "invalid JSON: %v", jsonErr)
		}
		return objects(chunks, list)
	}
	return objects(yamlChunks(body), list)
}

// objects parses each chunk, skips the empty ones and expands Lists; it
// counts the Lists.
func objects(chunks [][]byte, list string) ([][]byte, int, error) {
	var out [][]byte
	lists := 0
	bad := func(format string, args ...any) error {
		return fault.InvalidField(fmt.Sprintf("%s[%d]", list, len(out)), format, args...)
	}
	var add func(v any) error
	add = func(v any) error {
		switch o := v.(type) {
		case []any:
			for _, item := range o {
				if err := add(item); err != nil {
					return err
				}
			}
			return nil
		case map[string]any:
			kind, _ := o["kind"].(string)
			if items, ok := o["items"].([]any); ok && strings.HasSuffix(kind, "List") {
				lists++
				return add(items)
			}
			js, err := json.Marshal(o)
			if err != nil {
				return bad("%v", err)
			}
			out = append(out, js)
			return nil
		}
		return bad("must be a Kubernetes object (a YAML or JSON mapping with apiVersion and kind), not %s", describeJSON(v))
	}
	for _, chunk := range chunks {
		// Strict: a key given twice is an error, never a silent choice.
		js, err := yaml.YAMLToJSONStrict(chunk)
		if err != nil {
			return nil, 0, bad("not valid YAML or JSON: %v", err)
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.UseNumber() // integers pass through exactly, however large
		if err := dec.Decode(&v); err != nil {
			return nil, 0, bad("not valid YAML or JSON: %v", err)
		}
		if v == nil {
			continue // an empty or comment-only document
		}
		if err := add(v); err != nil {
			return nil, 0, err
		}
	}
	return out, lists, nil
}

// jsonChunks splits a stream of JSON values.
func jsonChunks(b []byte) ([][]byte, error) {
	var out [][]byte
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, raw)
	}
}

// yamlChunks splits multi-document YAML at its --- lines; each chunk is
// parsed later, so that a syntax error names its document.
func yamlChunks(b []byte) [][]byte {
	var out [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		chunk, err := r.Read()
		if err != nil {
			// io.EOF, or a read error of an in-memory reader: none.
			return out
		}
		out = append(out, chunk)
	}
}

func describeJSON(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}
