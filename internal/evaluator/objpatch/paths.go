package objpatch

import "k8s.io/apimachinery/pkg/runtime/schema"

// PathTrie is a set of field paths: full where the whole value is read.
type PathTrie struct {
	full bool
	kids map[string]*PathTrie
}

func (t *PathTrie) Add(path []string) {
	n := t
	for _, f := range path {
		if n.full {
			return
		}
		if n.kids == nil {
			n.kids = map[string]*PathTrie{}
		}
		k := n.kids[f]
		if k == nil {
			k = &PathTrie{}
			n.kids[f] = k
		}
		n = k
	}
	n.full, n.kids = true, nil
}

// prune is the part of a canonical object of shape sh that t's paths
// read. Only structs are pruned: what an expression sees of a kept field
// does not depend on its dropped siblings, and a pruned struct is still
// present wherever it was (a pointer is still set; a struct value is never
// empty to the typed view). A Go map is kept whole: dropping keys could
// make it empty, which the typed view shows as absent.
func prune(m map[string]any, t *PathTrie, sh *shape) map[string]any {
	out := make(map[string]any, len(t.kids))
	for k, kt := range t.kids {
		v, has := m[k]
		if !has {
			continue
		}
		if sub, ok := v.(map[string]any); ok && !kt.full {
			if i, known := sh.byName[k]; known {
				if fs := structShape(sh.fields[i].sh); fs != nil {
					v = prune(sub, kt, fs)
				}
			}
		}
		out[k] = v
	}
	return out
}

// structShape is sh, or what it points to, when that is a struct.
func structShape(sh *shape) *shape {
	if sh.kind == shPtr {
		sh = sh.elem
	}
	if sh.kind == shStruct {
		return sh
	}
	return nil
}

// Prune is the part of a canonical object of kind gvk that t's paths read;
// false when it is all of it (t reads the whole object or the kind has no
// struct shape).
func Prune(m map[string]any, t *PathTrie, gvk schema.GroupVersionKind) (map[string]any, bool) {
	sh := shapeOfKind(gvk)
	if t.full || sh == nil || sh.kind != shStruct {
		return nil, false
	}
	return prune(m, t, sh), true
}
