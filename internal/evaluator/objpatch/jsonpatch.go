package objpatch

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// FastOp is one JSON patch operation as the plugin builds it from a CEL
// JSONPatch value: the value already in its JSON form, decoded.
type FastOp struct {
	Op, Path string
	Value    any
	HasValue bool
}

// DecodeJSONValue decodes the JSON the plugin hands the patch library,
// numbers as int64 when they are integers, float64 otherwise, as the
// gateway's decoder gives a request's numbers.
func DecodeJSONValue(b []byte) (any, bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	return numbersToGo(v)
}

func numbersToGo(v any) (any, bool) {
	switch x := v.(type) {
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n, true
		}
		f, err := x.Float64()
		return f, err == nil
	case map[string]any:
		for k, e := range x {
			c, ok := numbersToGo(e)
			if !ok {
				return nil, false
			}
			x[k] = c
		}
	case []any:
		for i, e := range x {
			c, ok := numbersToGo(e)
			if !ok {
				return nil, false
			}
			x[i] = c
		}
	}
	return v, true
}

// ApplyJSONPatchFast applies add, remove and replace operations to the
// canonical object with the semantics of gopkg.in/evanphx/json-patch.v4
// (a replace of a missing object key adds it), copying what it changes.
// Anything that library would refuse, and test, move and copy, declines.
func ApplyJSONPatchFast(doc map[string]any, ops []FastOp) (map[string]any, bool) {
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
		if !strings.HasPrefix(op.Path, "/") || !printable(op.Path) {
			return nil, false
		}
		parts := strings.Split(op.Path[1:], "/")
		for i, p := range parts {
			parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
		}
		next, ok := patchAt(cur, parts, op)
		if !ok {
			return nil, false
		}
		cur = next
	}
	m, ok := cur.(map[string]any)
	return m, ok
}

// patchAt applies op at parts below node and returns node's copy.
func patchAt(node any, parts []string, op FastOp) (any, bool) {
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
			c, ok := patchAt(child, parts[1:], op)
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
		i, ok := arrayIndex(key)
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
			c, ok := patchAt(x[i], parts[1:], op)
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

// arrayIndex parses an index in its plain decimal spelling; signs, leading
// zeros and negative indexes (which the library accepts) decline.
func arrayIndex(s string) (int, bool) {
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

func printable(s string) bool {
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}
