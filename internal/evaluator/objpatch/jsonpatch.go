package objpatch

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// Op is one RFC 6902 JSON patch operation, its value decoded (DecodeJSON):
// an operation of a patch ApplyJSONPatch applies, as the plugin builds it
// from a CEL JSONPatch value, or of the patch Diff makes.
type Op struct {
	// Op is add, remove or replace; ApplyJSONPatch declines any other.
	Op string
	// Path is a JSON pointer (RFC 6901).
	Path string
	// Value is the value of add and replace, set when HasValue is.
	Value    any
	HasValue bool
}

// DecodeJSON decodes a JSON value the way the gateway decodes a
// request's object: numbers as int64 when they are integers, float64
// otherwise. false when b is not JSON or holds a number out of range.
func DecodeJSON(b []byte) (any, bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	return convertNumbers(v)
}

// convertNumbers replaces the json.Numbers of v, in place, by int64 or
// float64.
func convertNumbers(v any) (any, bool) {
	switch x := v.(type) {
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n, true
		}
		f, err := x.Float64()
		return f, err == nil
	case map[string]any:
		for k, e := range x {
			c, ok := convertNumbers(e)
			if !ok {
				return nil, false
			}
			x[k] = c
		}
	case []any:
		for i, e := range x {
			c, ok := convertNumbers(e)
			if !ok {
				return nil, false
			}
			x[i] = c
		}
	}
	return v, true
}

// ApplyJSONPatch applies add, remove and replace operations to an object
// with the semantics of gopkg.in/evanphx/json-patch.v4, the library the
// plugin's JSON patcher uses (a replace of a missing object key adds it).
// It copies what it changes and never modifies doc. It declines (false)
// anything that library would refuse, test, move and copy, and what it
// does not spell as the library would (a path that is not printable, an
// index with a sign or leading zeros); the caller then takes the exact
// path.
func ApplyJSONPatch(doc map[string]any, ops []Op) (map[string]any, bool) {
	var cur any = doc
	for _, op := range ops {
		if op.Op != "remove" && !op.HasValue {
			return nil, false
		}
		switch op.Op {
		case "add", "remove", "replace":
		default:
			return nil, false
		}
		// The plugin spells op and path with strconv.Quote, which is JSON
		// only for printable text.
		if !strings.HasPrefix(op.Path, "/") || !isPrintable(op.Path) {
			return nil, false
		}
		parts := strings.Split(op.Path[1:], "/")
		for i, p := range parts {
			parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
		}
		next, ok := applyOpAt(cur, parts, op)
		if !ok {
			return nil, false
		}
		cur = next
	}
	m, ok := cur.(map[string]any)
	return m, ok
}

// applyOpAt applies op at parts below node and returns node's copy.
func applyOpAt(node any, parts []string, op Op) (any, bool) {
	key := parts[0]
	last := len(parts) == 1
	switch x := node.(type) {
	case map[string]any:
		child, has := x[key]
		out := make(map[string]any, len(x)+1)
		for k, v := range x {
			out[k] = v
		}
		if !last {
			if !has {
				return nil, false
			}
			c, ok := applyOpAt(child, parts[1:], op)
			out[key] = c
			return out, ok
		}
		switch op.Op {
		case "add", "replace":
			out[key] = op.Value
		case "remove":
			if !has {
				return nil, false
			}
			delete(out, key)
		}
		return out, true
	case []any:
		if last && op.Op == "add" && key == "-" {
			return append(x[:len(x):len(x)], op.Value), true
		}
		i, ok := parseArrayIndex(key)
		if !ok {
			return nil, false
		}
		if last && op.Op == "add" {
			if i > len(x) {
				return nil, false
			}
			out := make([]any, 0, len(x)+1)
			out = append(append(append(out, x[:i]...), op.Value), x[i:]...)
			return out, true
		}
		if i >= len(x) {
			return nil, false
		}
		if !last {
			c, ok := applyOpAt(x[i], parts[1:], op)
			if !ok {
				return nil, false
			}
			out := append([]any(nil), x...)
			out[i] = c
			return out, true
		}
		if op.Op == "remove" {
			out := make([]any, 0, len(x)-1)
			return append(append(out, x[:i]...), x[i+1:]...), true
		}
		out := append([]any(nil), x...)
		out[i] = op.Value
		return out, true
	}
	// The library finds no container: an error.
	return nil, false
}

// parseArrayIndex parses an index in its plain decimal spelling; signs, leading
// zeros and negative indexes (which the library accepts) decline.
func parseArrayIndex(s string) (int, bool) {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	i, err := strconv.Atoi(s)
	return i, err == nil
}

func isPrintable(s string) bool {
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}
