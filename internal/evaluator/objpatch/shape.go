package objpatch

import (
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// A shape is what canon needs to know of a Go type of the scheme: its
// kind of JSON value, a struct's fields with their JSON names and
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
