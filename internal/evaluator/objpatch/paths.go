package objpatch

import "k8s.io/apimachinery/pkg/runtime/schema"

// FieldPaths is a set of field paths into an object, for KeepPaths: a path
// ends where the whole value below it is read. The zero value is empty.
type FieldPaths struct {
	whole    bool
	children map[string]*FieldPaths
}

// Add adds a path, each element a field name (or a map key); the empty
// path stands for the whole object. A path below one already whole adds
// nothing.
func (t *FieldPaths) Add(path []string) {
	n := t
	for _, f := range path {
		if n.whole {
			return
		}
		if n.children == nil {
			n.children = map[string]*FieldPaths{}
		}
		k := n.children[f]
		if k == nil {
			k = &FieldPaths{}
			n.children[f] = k
		}
		n = k
	}
	n.whole, n.children = true, nil
}

// KeepPaths is the part of obj, the canonical form (Canonicalize) of an
// object of kind gvk, that reads of t's paths can see once obj is decoded
// into its typed Go struct: what decoding that part gives is the same to
// every such read as decoding the whole. false when that is all of obj
// (t holds the empty path, or the kind is not a struct of client-go's
// scheme). obj is never modified; the result shares its values.
func KeepPaths(obj map[string]any, t *FieldPaths, gvk schema.GroupVersionKind) (map[string]any, bool) {
	sh := shapeOfKind(gvk)
	if t.whole || sh == nil || sh.kind != shStruct {
		return nil, false
	}
	return keepStructPaths(obj, t, sh), true
}

// keepStructPaths is the part of m, a canonical struct of shape sh, that
// t's paths read. Only structs are cut: what a read sees of a kept field
// does not depend on its dropped siblings, and a cut struct is still
// present wherever it was (a pointer is still set; a struct value is never
// empty to the typed view). A Go map is kept whole: dropping keys could
// make it empty, which the typed view shows as absent.
func keepStructPaths(m map[string]any, t *FieldPaths, sh *shape) map[string]any {
	out := make(map[string]any, len(t.children))
	for k, kt := range t.children {
		v, has := m[k]
		if !has {
			continue
		}
		if sub, ok := v.(map[string]any); ok && !kt.whole {
			if i, known := sh.byName[k]; known {
				if fs := structShapeOf(sh.fields[i].sh); fs != nil {
					v = keepStructPaths(sub, kt, fs)
				}
			}
		}
		out[k] = v
	}
	return out
}

// structShapeOf is sh, or what it points to, when that is a struct.
func structShapeOf(sh *shape) *shape {
	if sh.kind == shPtr {
		sh = sh.elem
	}
	if sh.kind == shStruct {
		return sh
	}
	return nil
}
