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
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, fault.Errorf(fault.BadRequest, "the request body is empty: send Kubernetes objects as YAML or JSON")
	}
	var (
		out [][]byte
		err error
	)
	// As kubectl decides: a body that starts as JSON is JSON.
	if trimmed[0] == '{' || trimmed[0] == '[' {
		chunks, jsonErr := jsonChunks(trimmed)
		if jsonErr != nil {
			return nil, fault.InvalidField(fmt.Sprintf("%s[%d]", list, len(chunks)), "invalid JSON: %v", jsonErr)
		}
		out, err = objects(chunks, list)
	} else {
		out, err = objects(yamlChunks(body), list)
	}
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fault.Errorf(fault.BadRequest, "the request body holds no objects: only empty or comment-only documents, or empty Lists")
	}
	return out, nil
}

// objects parses each chunk, skips the empty ones and expands Lists.
func objects(chunks [][]byte, list string) ([][]byte, error) {
	var out [][]byte
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
			return nil, bad("not valid YAML or JSON: %v", err)
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.UseNumber() // integers pass through exactly, however large
		if err := dec.Decode(&v); err != nil {
			return nil, bad("not valid YAML or JSON: %v", err)
		}
		if v == nil {
			continue // an empty or comment-only document
		}
		if err := add(v); err != nil {
			return nil, err
		}
	}
	return out, nil
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
