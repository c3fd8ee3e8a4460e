package objpatch

import (
	"math"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// The plugin holds a built-in kind as its typed Go struct, so whatever a
// mutation writes goes through a typed round trip: unknown fields and
// wrong types are refused, zero omitempty fields vanish, absent
// non-omitempty fields appear as their zero value, quantities and times
// are written canonically. The fast mutation path holds the object as
// JSON instead, always in the form runtime.DefaultUnstructuredConverter's
// ToUnstructured gives the typed struct (the canonical form), and
// canonicalValue reproduces FromUnstructured followed by ToUnstructured on
// a JSON value without the reflection, from a shape of the Go type derived
// once (shape.go). A
// value it is not sure of (a type it does not model, a value the typed
// decode would refuse) makes it decline, and the request takes the exact
// path.

// canonicalZero is the canonical form of the Go type's zero value.
func canonicalZero(sh *shape) (any, bool) {
	switch sh.kind {
	case shString:
		return "", true
	case shBool:
		return false, true
	case shInt:
		return int64(0), true
	case shFloat:
		return float64(0), true
	case shPtr, shSlice, shMap:
		return nil, true
	case shStruct:
		out := map[string]any{}
		for _, f := range sh.fields {
			if f.omitzero != nil && f.omitzero(reflect.New(f.sh.typ).Elem()) {
				continue
			}
			z, ok := canonicalZero(f.sh)
			if !ok {
				return nil, false
			}
			if f.omitempty && isEmptyCanonical(z, f.sh) {
				continue
			}
			out[f.name] = z
		}
		return out, true
	case shCustom:
		v, err := value.TypeReflectEntryOf(sh.typ).ToUnstructured(reflect.New(sh.typ).Elem())
		return v, err == nil && isScalar(v)
	}
	return nil, false
}

// isEmptyCanonical is the converter's isEmpty on the typed value whose
// canonical form v is.
func isEmptyCanonical(v any, sh *shape) bool {
	switch sh.kind {
	case shString:
		return v == ""
	case shBool:
		return v == false
	case shInt:
		return v == int64(0)
	case shFloat:
		return v == float64(0)
	case shPtr:
		return v == nil
	case shSlice:
		s, _ := v.([]any)
		return len(s) == 0
	case shMap:
		m, _ := v.(map[string]any)
		return len(m) == 0
	}
	return false // structs are never empty
}

func isScalar(v any) bool {
	switch v.(type) {
	case nil, string, bool, int64, float64:
		return true
	}
	return false
}

// canonicalValue is v after the typed round trip of sh's Go type. changed
// is set when the result is not v itself; ok is false when it declines.
// Maps and slices of v are never modified: a changed one is copied. prev,
// when not nil, is a canonical value v was made from: the maps and slices
// they share are canonical already and not walked again.
func canonicalValue(v, prev any, sh *shape) (out any, changed, ok bool) {
	if prev != nil && sameContainer(v, prev) {
		return v, false, true
	}
	if v == nil {
		z, ok := canonicalZero(sh)
		return z, z != nil, ok
	}
	switch sh.kind {
	case shString:
		_, ok := v.(string)
		return v, false, ok
	case shBool:
		_, ok := v.(bool)
		return v, false, ok
	case shInt:
		var n int64
		switch x := v.(type) {
		case int64:
			n = x
		case float64:
			if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
				return nil, false, false
			}
			n = int64(x)
		default:
			return nil, false, false
		}
		// FromUnstructured wraps a value out of the field's range, the
		// JSON decoder of a JSON patch's result refuses it: decline.
		if sh.bits < 64 && (n < -1<<(sh.bits-1) || n >= 1<<(sh.bits-1)) {
			return nil, false, false
		}
		if x, same := v.(int64); same && x == n {
			return v, false, true
		}
		return n, true, true
	case shFloat:
		var f float64
		switch x := v.(type) {
		case int64:
			f = float64(x)
			if sh.bits == 32 {
				f = float64(float32(x))
			}
			return f, true, true
		case float64:
			f = x
			if sh.bits == 32 {
				f = float64(float32(x))
			}
			return f, f != x, true
		}
		return nil, false, false
	case shPtr:
		return canonicalValue(v, prev, sh.elem)
	case shSlice:
		s, ok := v.([]any)
		if !ok {
			return nil, false, false
		}
		ps, _ := prev.([]any)
		var cp []any
		for i, e := range s {
			var pe any
			if i < len(ps) {
				pe = ps[i]
			}
			c, ch, ok := canonicalValue(e, pe, sh.elem)
			if !ok {
				return nil, false, false
			}
			if ch && cp == nil {
				cp = make([]any, len(s))
				copy(cp, s[:i])
			}
			if cp != nil {
				cp[i] = c
			}
		}
		if cp == nil {
			return v, false, true
		}
		return cp, true, true
	case shMap:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false, false
		}
		pm, _ := prev.(map[string]any)
		var cp map[string]any
		for k, e := range m {
			c, ch, ok := canonicalValue(e, pm[k], sh.elem)
			if !ok {
				return nil, false, false
			}
			if ch {
				if cp == nil {
					cp = make(map[string]any, len(m))
				}
				cp[k] = c
			}
		}
		if cp == nil {
			return v, false, true
		}
		for k, e := range m {
			if _, done := cp[k]; !done {
				cp[k] = e
			}
		}
		return cp, true, true
	case shStruct:
		return canonicalStruct(v, prev, sh)
	case shCustom:
		c, _, ok := canonicalCustom(v, sh)
		return c, ok && c != v, ok
	}
	return nil, false, false
}

// customMemo remembers the canonical form of custom-typed strings (a
// quantity's "500m"), which the converter finds through a JSON encoding and
// decoding. It is bounded: emptied when full.
var customMemo struct {
	sync.Mutex
	m map[customKey]any
}

type customKey struct {
	t     reflect.Type
	s     string
	n     int64
	isInt bool
}

// customMemoKey is the memo's key for v; false for values it does not keep.
func customMemoKey(v any, sh *shape) (customKey, bool) {
	switch x := v.(type) {
	case string:
		return customKey{t: sh.typ, s: x}, true
	case int64:
		return customKey{t: sh.typ, n: x, isInt: true}, true
	}
	return customKey{}, false
}

const customMemoSize = 4096

// canonicalCustom converts v with the reflect cache entry of sh's type, as the
// converter does, and returns the typed value too.
func canonicalCustom(v any, sh *shape) (any, reflect.Value, bool) {
	key, keep := customMemoKey(v, sh)
	if keep {
		customMemo.Lock()
		c, hit := customMemo.m[key]
		customMemo.Unlock()
		if hit {
			return c, reflect.Value{}, true
		}
	}
	c, dv, ok := convertCustom(v, sh)
	if keep && ok {
		customMemo.Lock()
		if customMemo.m == nil || len(customMemo.m) >= customMemoSize {
			customMemo.m = make(map[customKey]any, 64)
		}
		customMemo.m[key] = c
		customMemo.Unlock()
	}
	return c, dv, ok
}

func convertCustom(v any, sh *shape) (any, reflect.Value, bool) {
	dv := reflect.New(sh.typ).Elem()
	entry := value.TypeReflectEntryOf(sh.typ)
	if v != nil {
		if err := entry.FromUnstructured(reflect.ValueOf(v), dv); err != nil {
			return nil, dv, false
		}
	}
	c, err := entry.ToUnstructured(dv)
	if err != nil || !isScalar(c) {
		return nil, dv, false
	}
	return c, dv, true
}

func canonicalStruct(v, prev any, sh *shape) (any, bool, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false, false
	}
	pm, _ := prev.(map[string]any)
	present := 0
	for k := range m {
		if _, known := sh.byName[k]; !known {
			// FromUnstructured would drop it, a strict decode refuse it.
			return nil, false, false
		}
	}
	var vals []any // the fields' canonical values, once one changed
	for i, f := range sh.fields {
		in, has := m[f.name]
		var c any
		var ch bool
		if !has && f.omittedWhenAbsent {
			c = omittedField
		} else if f.omitzero != nil {
			var dv reflect.Value
			var ok bool
			if c, dv, ok = convertCustom(in, f.sh); !ok {
				return nil, false, false
			}
			if has {
				present++
			}
			switch {
			case f.omitzero(dv):
				c, ch = omittedField, has
			case !has || c != in:
				ch = true
			}
		} else if has {
			present++
			var ok bool
			if c, ch, ok = canonicalValue(in, pm[f.name], f.sh); !ok {
				return nil, false, false
			}
			if f.omitempty && isEmptyCanonical(c, f.sh) {
				ch = true
				c = omittedField
			}
		} else {
			z, ok := canonicalZero(f.sh)
			if !ok {
				return nil, false, false
			}
			if f.omitempty && isEmptyCanonical(z, f.sh) {
				c = omittedField
			} else {
				c, ch = z, true
			}
		}
		if ch && vals == nil {
			vals = make([]any, len(sh.fields))
			for j := range i {
				if x, has := m[sh.fields[j].name]; has {
					vals[j] = x
				} else {
					vals[j] = omittedField
				}
			}
		}
		if vals != nil {
			vals[i] = c
		}
	}
	if vals == nil {
		return v, false, true
	}
	out := make(map[string]any, present)
	for i, f := range sh.fields {
		if vals[i] != omittedField {
			out[f.name] = vals[i]
		}
	}
	return out, true, true
}

// omittedField marks a field the canonical form leaves out.
var omittedField any = &struct{ byte }{}

// Canonicalize is the canonical form of obj, an object of a kind of
// client-go's scheme, as the plugin holds it: obj decoded into its typed Go
// struct and encoded back (FromUnstructured, then ToUnstructured), with
// the kind's apiVersion and kind set as the decoder sets them. ok is false
// when it declines: a kind the scheme does not know, a value the typed
// decode would refuse or change in a way this does not model (unknown
// fields, an integer out of its field's range, a bad quantity or time).
// obj is never modified; what needs no change is shared with the result.
// prev, when not nil, is a canonical object obj was made from (obj is prev
// after a patch): the maps and slices they share are not walked again.
func Canonicalize(obj, prev map[string]any, gvk schema.GroupVersionKind) (map[string]any, bool) {
	sh := shapeOfKind(gvk)
	if sh == nil || sh.kind != shStruct {
		return nil, false
	}
	var p any
	if prev != nil {
		p = prev
	}
	c, _, ok := canonicalValue(obj, p, sh)
	if !ok {
		return nil, false
	}
	out := c.(map[string]any)
	apiVersion, kind := gvk.GroupVersion().String(), gvk.Kind
	if out["apiVersion"] != apiVersion || out["kind"] != kind {
		cp := make(map[string]any, len(out)+2)
		for k, v := range out {
			cp[k] = v
		}
		cp["apiVersion"], cp["kind"] = apiVersion, kind
		out = cp
	}
	return out, true
}

// sameContainer reports whether a and b are the same decoded map or slice.
func sameContainer(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && sameMap(x, y)
	case []any:
		y, ok := b.([]any)
		return ok && len(x) > 0 && sameSlice(x, y)
	}
	return false
}
