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
// ToUnstructured gives the typed struct (the canonical form), and canon
// reproduces FromUnstructured followed by ToUnstructured on a JSON value
// without the reflection, from a shape of the Go type derived once. A
// value it is not sure of (a type it does not model, a value the typed
// decode would refuse) makes it decline, and the request takes the exact
// path.

// zeroCanon is the canonical form of the Go type's zero value.
func zeroCanon(sh *shape) (any, bool) {
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
			z, ok := zeroCanon(f.sh)
			if !ok {
				return nil, false
			}
			if f.omitempty && emptyCanon(z, f.sh) {
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

// emptyCanon is the converter's isEmpty on the typed value whose canonical
// form v is.
func emptyCanon(v any, sh *shape) bool {
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

// canon is v after the typed round trip of sh's Go type. changed is set
// when the result is not v itself; ok is false when canon declines.
// Maps and slices of v are never modified: a changed one is copied. prev,
// when not nil, is a canonical value v was made from: the maps and slices
// they share are canonical already and not walked again.
func canon(v, prev any, sh *shape) (out any, changed, ok bool) {
	if prev != nil && sharedRef(v, prev) {
		return v, false, true
	}
	if v == nil {
		z, ok := zeroCanon(sh)
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
		return canon(v, prev, sh.elem)
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
			c, ch, ok := canon(e, pe, sh.elem)
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
			c, ch, ok := canon(e, pm[k], sh.elem)
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
		return canonStruct(v, prev, sh)
	case shCustom:
		c, _, ok := canonCustom(v, sh)
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

// memoKey is the memo's key for v; false for values it does not keep.
func memoKey(v any, sh *shape) (customKey, bool) {
	switch x := v.(type) {
	case string:
		return customKey{t: sh.typ, s: x}, true
	case int64:
		return customKey{t: sh.typ, n: x, isInt: true}, true
	}
	return customKey{}, false
}

const customMemoSize = 4096

// canonCustom converts v with the reflect cache entry of sh's type, as the
// converter does, and returns the typed value too.
func canonCustom(v any, sh *shape) (any, reflect.Value, bool) {
	key, keep := memoKey(v, sh)
	if keep {
		customMemo.Lock()
		c, hit := customMemo.m[key]
		customMemo.Unlock()
		if hit {
			return c, reflect.Value{}, true
		}
	}
	c, dv, ok := canonCustomSlow(v, sh)
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

func canonCustomSlow(v any, sh *shape) (any, reflect.Value, bool) {
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

func canonStruct(v, prev any, sh *shape) (any, bool, bool) {
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
		if !has && f.absentDrops {
			c = dropped
		} else if f.omitzero != nil {
			var dv reflect.Value
			var ok bool
			if c, dv, ok = canonCustomSlow(in, f.sh); !ok {
				return nil, false, false
			}
			if has {
				present++
			}
			switch {
			case f.omitzero(dv):
				c, ch = dropped, has
			case !has || c != in:
				ch = true
			}
		} else if has {
			present++
			var ok bool
			if c, ch, ok = canon(in, pm[f.name], f.sh); !ok {
				return nil, false, false
			}
			if f.omitempty && emptyCanon(c, f.sh) {
				ch = true
				c = dropped
			}
		} else {
			z, ok := zeroCanon(f.sh)
			if !ok {
				return nil, false, false
			}
			if f.omitempty && emptyCanon(z, f.sh) {
				c = dropped
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
					vals[j] = dropped
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
		if vals[i] != dropped {
			out[f.name] = vals[i]
		}
	}
	return out, true, true
}

// dropped marks a field the canonical form leaves out.
var dropped any = &struct{ byte }{}

// CanonObject is the canonical form of a built-in kind's object as the
// plugin holds it: the typed round trip, with the kind's apiVersion and
// kind set as the decoder sets them. ok is false when canon declines.
// prev, when not nil, is the canonical object m was made from.
func CanonObject(m, prev map[string]any, gvk schema.GroupVersionKind) (map[string]any, bool) {
	sh := shapeOfKind(gvk)
	if sh == nil || sh.kind != shStruct {
		return nil, false
	}
	var p any
	if prev != nil {
		p = prev
	}
	c, _, ok := canon(m, p, sh)
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

// sharedRef reports whether a and b are the same decoded map or slice.
func sharedRef(a, b any) bool {
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
