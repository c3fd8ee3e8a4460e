package objpatch

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// A mutation's answer is an RFC 6902 patch from the request's object to the
// final one. The final object is the request's JSON with the changes the
// mutations made to the object as the plugin holds it (CarryOver); the patch
// is the difference of the two (Diff): add, remove and replace over
// objects, arrays compared element by element, with elements added or
// removed at the end.

// CarryOver carries the change from before to after over to sent, where
// sent is before as the request spelled it: what did not change keeps
// sent's form, what changed takes after's. Maps are merged key by key and
// arrays position by position; anything else that changed is replaced.
func CarryOver(sent, before, after any) any {
	if jsonEqual(before, after) {
		return sent
	}
	switch a := after.(type) {
	case map[string]any:
		b, ok1 := before.(map[string]any)
		s, ok2 := sent.(map[string]any)
		if !ok1 || !ok2 {
			return after
		}
		out := make(map[string]any, len(s)+len(a))
		for k, v := range s {
			out[k] = v
		}
		for k, av := range a {
			bv, inBefore := b[k]
			sv, inSent := s[k]
			switch {
			case inBefore && inSent:
				out[k] = CarryOver(sv, bv, av)
			case inBefore && jsonEqual(bv, av):
				// absent as sent, unchanged
			default:
				out[k] = av
			}
		}
		for k := range b {
			if _, ok := a[k]; !ok {
				delete(out, k)
			}
		}
		return out
	case []any:
		b, ok1 := before.([]any)
		s, ok2 := sent.([]any)
		if !ok1 || !ok2 || len(b) != len(s) {
			return after
		}
		// Position by position: an element added or removed at the end
		// leaves the others as sent.
		out := make([]any, len(a))
		for i := range a {
			if i < len(b) {
				out[i] = CarryOver(s[i], b[i], a[i])
			} else {
				out[i] = a[i]
			}
		}
		return out
	}
	return after
}

// Diff is the RFC 6902 JSON patch document that turns a into b, map keys
// in sorted order, or nil when a and b are equal as JSON (numbers by
// value). It leaves a and b as they are.
func Diff(a, b any) []byte {
	ops := diffOps(a, b)
	if len(ops) == 0 {
		return nil
	}
	return marshalPatch(ops)
}

// diffOps is Diff's operations.
func diffOps(a, b any) []Op {
	var ops []Op
	diffInto(&ops, "", a, b)
	return ops
}

func diffInto(ops *[]Op, path string, a, b any) {
	switch bv := b.(type) {
	case map[string]any:
		av, ok := a.(map[string]any)
		if !ok {
			break
		}
		if sameMap(av, bv) {
			return
		}
		for _, k := range sortedKeys(av) {
			if _, ok := bv[k]; !ok {
				*ops = append(*ops, Op{Op: "remove", Path: path + "/" + escapePointer(k)})
			}
		}
		for _, k := range sortedKeys(bv) {
			p := path + "/" + escapePointer(k)
			if old, ok := av[k]; ok {
				diffInto(ops, p, old, bv[k])
			} else {
				*ops = append(*ops, Op{Op: "add", Path: p, Value: bv[k], HasValue: true})
			}
		}
		return
	case []any:
		av, ok := a.([]any)
		if !ok {
			break
		}
		if len(av) == len(bv) && sameSlice(av, bv) {
			return
		}
		n := min(len(av), len(bv))
		for i := range n {
			diffInto(ops, path+"/"+strconv.Itoa(i), av[i], bv[i])
		}
		for i := n; i < len(bv); i++ {
			*ops = append(*ops, Op{Op: "add", Path: path + "/" + strconv.Itoa(i), Value: bv[i], HasValue: true})
		}
		for i := len(av) - 1; i >= n; i-- {
			*ops = append(*ops, Op{Op: "remove", Path: path + "/" + strconv.Itoa(i)})
		}
		return
	}
	if !jsonEqual(a, b) {
		*ops = append(*ops, Op{Op: "replace", Path: path, Value: b, HasValue: true})
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// escapePointer escapes a key as a JSON pointer (RFC 6901) token.
func escapePointer(k string) string {
	if !strings.ContainsAny(k, "~/") {
		return k
	}
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// marshalPatch writes the operations as a JSON patch document.
func marshalPatch(ops []Op) []byte {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, o := range ops {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"op":"`)
		buf.WriteString(o.Op)
		buf.WriteString(`","path":`)
		p, _ := json.Marshal(o.Path)
		buf.Write(p)
		if o.Op != "remove" {
			buf.WriteString(`,"value":`)
			v, err := json.Marshal(o.Value)
			if err != nil {
				v = []byte("null")
			}
			buf.Write(v)
		}
		buf.WriteByte('}')
	}
	buf.WriteByte(']')
	return buf.Bytes()
}

// jsonEqual compares decoded JSON values, numbers by value whatever their
// Go type.
func jsonEqual(a, b any) bool {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		if sameMap(av, bv) {
			return true
		}
		for k, x := range av {
			y, ok := bv[k]
			if !ok || !jsonEqual(x, y) {
				return false
			}
		}
		return true
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		if sameSlice(av, bv) {
			return true
		}
		for i := range av {
			if !jsonEqual(av[i], bv[i]) {
				return false
			}
		}
		return true
	case string, bool, nil:
		return a == b
	}
	if ai, ok := a.(int64); ok {
		if bi, ok := b.(int64); ok {
			return ai == bi
		}
	}
	x, ok1 := numberValue(a)
	y, ok2 := numberValue(b)
	return ok1 && ok2 && x == y
}

func numberValue(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, !math.IsNaN(n)
	case float32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// sameMap and sameSlice tell the same decoded value shared by two
// objects: the fast mutation path copies only what it changes, so most of
// the final object is the request's own.
func sameMap(a, b map[string]any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func sameSlice(a, b []any) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
