package evaluator

import (
	"math"
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
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

type shapeKind uint8

const (
	shDecline shapeKind = iota
	shString
	shBool
	shInt
	shFloat
	shStruct
	shPtr
	shSlice
	shMap
	// shCustom is a struct type with its own JSON form (Quantity, Time,
	// IntOrString): converted by the same reflect cache entry the
	// converter uses, on the small value alone.
	shCustom
)

type shape struct {
	kind   shapeKind
	bits   int // shInt, shFloat
	fields []fieldShape
	byName map[string]int
	elem   *shape
	typ    reflect.Type
	// finished is set once finish has computed the fields' absentDrops;
	// a shape is read without the lock only after that.
	finished bool
}

type fieldShape struct {
	name      string
	omitempty bool
	// omitzero is set for an omitzero field of a custom type, the only
	// omitzero fields modelled (metav1.ObjectMeta's creationTimestamp).
	omitzero func(reflect.Value) bool
	sh       *shape
	// absentDrops is set when the canonical form leaves the field out
	// when it is absent (finish computes it).
	absentDrops bool
}

var (
	shapesMu sync.Mutex
	shapes   = map[reflect.Type]*shape{}
	// kindShapes caches the shape of a GVK's Go type; nil when the
	// scheme does not know it.
	kindShapes sync.Map // schema.GroupVersionKind -> *shape
)

// shapeOfKind is the shape of a built-in kind's Go type, nil if unknown.
func shapeOfKind(gvk schema.GroupVersionKind) *shape {
	if v, ok := kindShapes.Load(gvk); ok {
		return v.(*shape)
	}
	var sh *shape
	if t, ok := clientgoscheme.Scheme.AllKnownTypes()[gvk]; ok {
		shapesMu.Lock()
		sh = shapeOfLocked(t)
		finish(sh, map[*shape]bool{})
		shapesMu.Unlock()
	}
	kindShapes.Store(gvk, sh)
	return sh
}

func shapeOfLocked(t reflect.Type) *shape {
	if sh, ok := shapes[t]; ok {
		return sh
	}
	sh := &shape{typ: t}
	shapes[t] = sh // before the fields: types may be recursive
	entry := value.TypeReflectEntryOf(t)
	// A pointer's own entry only forwards to its element's.
	if t.Kind() != reflect.Pointer && (entry.CanConvertFromUnstructured() || entry.CanConvertToUnstructured()) {
		// The converter checks simple kinds before a custom decoder; only
		// structs are modelled.
		if t.Kind() == reflect.Struct && entry.CanConvertFromUnstructured() && entry.CanConvertToUnstructured() {
			sh.kind = shCustom
		}
		return sh
	}
	switch t.Kind() {
	case reflect.String:
		sh.kind = shString
	case reflect.Bool:
		sh.kind = shBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		sh.kind, sh.bits = shInt, t.Bits()
	case reflect.Float32, reflect.Float64:
		sh.kind, sh.bits = shFloat, t.Bits()
	case reflect.Pointer:
		sh.kind, sh.elem = shPtr, shapeOfLocked(t.Elem())
	case reflect.Slice:
		if t.Elem().Kind() != reflect.Uint8 {
			sh.kind, sh.elem = shSlice, shapeOfLocked(t.Elem())
		}
	case reflect.Map:
		if t.Key().Kind() == reflect.String {
			sh.kind, sh.elem = shMap, shapeOfLocked(t.Elem())
		}
	case reflect.Struct:
		sh.byName = map[string]int{}
		if addFields(sh, t) {
			sh.kind = shStruct
		}
	}
	return sh
}

// finish computes what the fields of sh and its parts need once.
func finish(sh *shape, seen map[*shape]bool) {
	if sh.finished || seen[sh] {
		return
	}
	seen[sh] = true
	defer func() { sh.finished = true }()
	for i := range sh.fields {
		f := &sh.fields[i]
		if f.omitzero != nil {
			f.absentDrops = f.omitzero(reflect.New(f.sh.typ).Elem())
		} else if z, ok := zeroCanon(f.sh); ok {
			f.absentDrops = f.omitempty && emptyCanon(z, f.sh)
		}
		finish(f.sh, seen)
	}
	if sh.elem != nil {
		finish(sh.elem, seen)
	}
}

// addFields adds t's fields to sh, inlined ones flattened, as the
// converter's fieldInfoFromField names them; false for what it does not
// model (omitzero, names that collide).
func addFields(sh *shape, t reflect.Type) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		name, omitempty, omitzero, inline := f.Name, false, false, false
		if tag, ok := f.Tag.Lookup("json"); ok && tag != "" {
			items := strings.Split(tag, ",")
			name = items[0]
			for _, it := range items[1:] {
				switch it {
				case "omitempty":
					omitempty = true
				case "omitzero":
					omitzero = true
				case "inline":
					inline = true
				}
			}
			if name == "" && f.Anonymous {
				inline = true
			} else if name == "" {
				name = f.Name
			}
		} else if f.Anonymous {
			inline = true
		}
		if name == "-" && !inline {
			continue
		}
		if inline {
			if f.Type.Kind() != reflect.Struct || !addFields(sh, f.Type) {
				return false
			}
			continue
		}
		if !f.IsExported() {
			return false
		}
		if _, dup := sh.byName[name]; dup {
			return false
		}
		fs := fieldShape{name: name, omitempty: omitempty, sh: shapeOfLocked(f.Type)}
		if omitzero {
			if fs.sh.kind != shCustom {
				return false
			}
			fs.omitzero = value.OmitZeroFunc(f.Type)
		}
		sh.byName[name] = len(sh.fields)
		sh.fields = append(sh.fields, fs)
	}
	return true
}

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

// canonObject is the canonical form of a built-in kind's object as the
// plugin holds it: the typed round trip, with the kind's apiVersion and
// kind set as the decoder sets them. ok is false when canon declines.
// prev, when not nil, is the canonical object m was made from.
func canonObject(m, prev map[string]any, gvk schema.GroupVersionKind) (map[string]any, bool) {
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
