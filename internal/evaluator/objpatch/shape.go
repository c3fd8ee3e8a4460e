package objpatch

import (
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// A shape is what canonicalValue needs to know of a Go type of the scheme:
// its kind of JSON value, a struct's fields with their JSON names and
// omitempty, what a pointer, slice or map holds, and which types convert
// themselves (quantities, times, int-or-string). It is derived once per
// type by reflection, as the converter's own field cache is.

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
	// resolved is set once resolveOmittedWhenAbsent has computed the
	// fields' omittedWhenAbsent; a shape is read without the lock only
	// after that.
	resolved bool
}

type fieldShape struct {
	name      string
	omitempty bool
	// omitzero is set for an omitzero field of a custom type, the only
	// omitzero fields modelled (metav1.ObjectMeta's creationTimestamp).
	omitzero func(reflect.Value) bool
	sh       *shape
	// omittedWhenAbsent is set when the canonical form leaves the field out
	// when it is absent (resolveOmittedWhenAbsent computes it).
	omittedWhenAbsent bool
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
		sh = shapeOfTypeLocked(t)
		resolveOmittedWhenAbsent(sh, map[*shape]bool{})
		shapesMu.Unlock()
	}
	kindShapes.Store(gvk, sh)
	return sh
}

func shapeOfTypeLocked(t reflect.Type) *shape {
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
		sh.kind, sh.elem = shPtr, shapeOfTypeLocked(t.Elem())
	case reflect.Slice:
		if t.Elem().Kind() != reflect.Uint8 {
			sh.kind, sh.elem = shSlice, shapeOfTypeLocked(t.Elem())
		}
	case reflect.Map:
		if t.Key().Kind() == reflect.String {
			sh.kind, sh.elem = shMap, shapeOfTypeLocked(t.Elem())
		}
	case reflect.Struct:
		sh.byName = map[string]int{}
		if addStructFields(sh, t) {
			sh.kind = shStruct
		}
	}
	return sh
}

// resolveOmittedWhenAbsent sets omittedWhenAbsent on the fields of sh and
// of the shapes it holds, once: it needs the canonical zero value of each
// field's type, which is known only when the whole (maybe recursive) type
// has its shape.
func resolveOmittedWhenAbsent(sh *shape, seen map[*shape]bool) {
	if sh.resolved || seen[sh] {
		return
	}
	seen[sh] = true
	defer func() { sh.resolved = true }()
	for i := range sh.fields {
		f := &sh.fields[i]
		if f.omitzero != nil {
			f.omittedWhenAbsent = f.omitzero(reflect.New(f.sh.typ).Elem())
		} else if z, ok := canonicalZero(f.sh); ok {
			f.omittedWhenAbsent = f.omitempty && isEmptyCanonical(z, f.sh)
		}
		resolveOmittedWhenAbsent(f.sh, seen)
	}
	if sh.elem != nil {
		resolveOmittedWhenAbsent(sh.elem, seen)
	}
}

// addStructFields adds t's fields to sh, inlined ones flattened, as the
// converter's fieldInfoFromField names them; false for what it does not
// model (omitzero, names that collide).
func addStructFields(sh *shape, t reflect.Type) bool {
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
			if f.Type.Kind() != reflect.Struct || !addStructFields(sh, f.Type) {
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
		fs := fieldShape{name: name, omitempty: omitempty, sh: shapeOfTypeLocked(f.Type)}
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
