package objpatch

import (
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// ServerSideApply merges the apply configuration config into live, the
// canonical form (Canonicalize) of an object of kind gvk, as the plugin's
// patch.ApplyStructuredMergeDiff does with the type converter tc, and
// returns the merged object; false when it declines, on whatever the
// plugin would refuse (an atomic field in config, a live object its
// conversion refuses, a merge error) and on what this does not model: the
// caller then takes the exact path, which gives the plugin's message. live
// is never modified; config gets gvk's apiVersion and kind. The result is
// not canonical: Canonicalize it. liveChecked may be true when live is the
// canonical form of an earlier result of ServerSideApply, which converts
// as surely as the objects it was merged from: it skips that check.
//
// The plugin converts the whole live object to a typed value (validating
// it) and merges the whole of it; here the apply configuration alone is
// converted and validated as the plugin does, the live object is checked
// once per version for what its validation could refuse
// (liveConvertsToTyped), and the merge descends only where the apply
// configuration has fields: through non-atomic maps and structs the merge
// is key by key, and every other node (lists, scalars, fields the live
// object lacks) is merged by structured-merge-diff itself, on that node
// alone.
func ServerSideApply(tc managedfields.TypeConverter, live, config map[string]any, gvk schema.GroupVersionKind, liveChecked bool) (map[string]any, bool) {
	u := &unstructured.Unstructured{Object: config}
	u.SetGroupVersionKind(gvk)
	pt, err := tc.ObjectToTyped(u)
	if err != nil {
		return nil, false
	}
	s, tr := pt.Schema(), pt.TypeRef()
	if containsAtomic(s, tr, pt.AsValue()) {
		return nil, false // validatePatch refuses it
	}
	if !liveChecked && !liveConvertsToTyped(s, tr, live) {
		return nil, false
	}
	out, keep, ok := mergeNode(s, tr, live, true, config)
	if !ok || !keep {
		return nil, false
	}
	m, ok := out.(map[string]any)
	return m, ok
}

// containsAtomic is validatePatch's findAtomics, reduced to whether it finds
// any.
func containsAtomic(s *smdschema.Schema, tr smdschema.TypeRef, v value.Value) bool {
	a, ok := s.Resolve(tr)
	if !ok {
		return false
	}
	if v.IsMap() && a.Map != nil {
		if a.Map.ElementRelationship == smdschema.Atomic {
			return true
		}
		found := false
		v.AsMap().Iterate(func(key string, val value.Value) bool {
			if sf, ok := a.Map.FindField(key); ok && containsAtomic(s, sf.Type, val) {
				found = true
				return false
			}
			return true
		})
		if found {
			return true
		}
	}
	if v.IsList() && a.List != nil {
		if a.List.ElementRelationship == smdschema.Atomic {
			return true
		}
		list := v.AsList()
		for i := range list.Length() {
			if containsAtomic(s, a.List.ElementType, list.At(i)) {
				return true
			}
		}
	}
	return false
}

// liveConvertsToTyped reports whether the plugin's conversion of the live
// object to a typed value (ObjectToTyped with AllowDuplicates) surely
// succeeds. The object is canonical, the encoding of a typed Go object, so its
// fields and scalar types are the schema's; what can still fail is a keyed
// list element that is not an object or omits every key (an imagePullSecrets
// entry without a name). Anything else it does not recognise is refused.
func liveConvertsToTyped(s *smdschema.Schema, tr smdschema.TypeRef, v any) bool {
	a, ok := s.Resolve(tr)
	if !ok {
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		if a.Map == nil {
			return false
		}
		for k, e := range x {
			ft := a.Map.ElementType
			if sf, ok := a.Map.FindField(k); ok {
				ft = sf.Type
			}
			switch e.(type) {
			case map[string]any, []any:
				if mayHoldKeyedList(s, ft) && !liveConvertsToTyped(s, ft, e) {
					return false
				}
			}
		}
	case []any:
		if a.List == nil {
			return false
		}
		keyed := a.List.ElementRelationship == smdschema.Associative && len(a.List.Keys) > 0
		for _, e := range x {
			if keyed {
				m, ok := e.(map[string]any)
				if !ok || !hasAnyKey(m, a.List.Keys) {
					return false
				}
			} else if a.List.ElementRelationship == smdschema.Associative {
				switch e.(type) {
				case map[string]any, []any:
					return false
				}
			}
			if !liveConvertsToTyped(s, a.List.ElementType, e) {
				return false
			}
		}
	}
	return true
}

// mayHoldKeyedList reports whether a value of type tr may hold a keyed list,
// the only thing liveConvertsToTyped looks for, so that it skips the rest
// (labels, resources, a container's securityContext). A type that does not
// resolve is assumed to.
func mayHoldKeyedList(s *smdschema.Schema, tr smdschema.TypeRef) bool {
	if tr.NamedType == nil {
		// An inlined scalar (a label's value) holds none.
		return tr.Inlined.List != nil || tr.Inlined.Map != nil
	}
	key := keyedListMemoKey{s, *tr.NamedType}
	if v, ok := keyedListMemo.Load(key); ok {
		return v.(bool)
	}
	keyedListMemo.Store(key, true) // a recursive type holds what it holds
	v := mayHoldKeyedListUncached(s, tr)
	keyedListMemo.Store(key, v)
	return v
}

type keyedListMemoKey struct {
	s    *smdschema.Schema
	name string
}

var keyedListMemo sync.Map // keyedListMemoKey -> bool

func mayHoldKeyedListUncached(s *smdschema.Schema, tr smdschema.TypeRef) bool {
	a, ok := s.Resolve(tr)
	if !ok {
		return true
	}
	if a.List != nil {
		if a.List.ElementRelationship == smdschema.Associative {
			return true
		}
		if mayHoldKeyedList(s, a.List.ElementType) {
			return true
		}
	}
	if a.Map != nil {
		for _, f := range a.Map.Fields {
			if mayHoldKeyedList(s, f.Type) {
				return true
			}
		}
		return mayHoldKeyedList(s, a.Map.ElementType)
	}
	return false
}

func hasAnyKey(m map[string]any, keys []string) bool {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// mergeNode merges rhs into lhs (absent unless hasLHS) at type tr, as the
// merging walker of structured-merge-diff does with ruleKeepRHS. keep is
// false when the merge yields nothing (the walker's nil out). Maps of lhs
// are never modified.
func mergeNode(s *smdschema.Schema, tr smdschema.TypeRef, lhs any, hasLHS bool, rhs any) (out any, keep, ok bool) {
	a, found := s.Resolve(tr)
	if !found {
		return nil, false, false
	}
	if ll, ok := lhs.([]any); ok && hasLHS && a.List != nil {
		if rl, ok := rhs.([]any); ok {
			if out, ok := mergeKeyedList(s, a.List, ll, rl); ok {
				return out, true, true
			}
		}
	}
	lm, lok := lhs.(map[string]any)
	rm, rok := rhs.(map[string]any)
	if !hasLHS || !lok || !rok || len(lm) == 0 || len(rm) == 0 || a.Map == nil || a.Map.ElementRelationship == smdschema.Atomic {
		return mergeWithWalker(s, tr, lhs, hasLHS, rhs)
	}
	// The walker's visitMapItems: keys of lhs alone keep their value
	// (liveConvertsToTyped has checked them), keys of rhs are merged.
	m := make(map[string]any, len(lm)+len(rm))
	for k, v := range lm {
		m[k] = v
	}
	for k, rv := range rm {
		ft := a.Map.ElementType
		if sf, ok := a.Map.FindField(k); ok {
			ft = sf.Type
		}
		lv, has := lm[k]
		o, keep, ok := mergeNode(s, ft, lv, has, rv)
		if !ok {
			return nil, false, false
		}
		if keep {
			m[k] = o
		} else {
			delete(m, k)
		}
	}
	return m, true, true
}

// mergeWithWalker merges one node with structured-merge-diff's own walker.
func mergeWithWalker(s *smdschema.Schema, tr smdschema.TypeRef, lhs any, hasLHS bool, rhs any) (any, bool, bool) {
	var lv value.Value
	if hasLHS {
		lv = value.NewValueInterface(lhs)
	}
	// Unvalidated: the apply configuration was validated whole, the
	// object is canonical and checked by liveConvertsToTyped, as the plugin's
	// conversions would; validating again would walk the node twice.
	//lint:ignore SA1019 see above
	lt := typed.AsTypedUnvalidated(lv, s, tr)
	//lint:ignore SA1019 see above
	rt := typed.AsTypedUnvalidated(value.NewValueInterface(rhs), s, tr)
	res, err := lt.Merge(rt)
	if err != nil {
		return nil, false, false
	}
	v := res.AsValue()
	if v == nil {
		return nil, false, true
	}
	return v.Unstructured(), true, true
}

// mergeKeyedList is the merging walker's visitListItems for a list with
// keys (containers by name), with the items merged by mergeNode: the
// order of the result is the walker's. ok is false, and the list is left
// to the walker itself, for what this does not model: empty lists (a
// leaf), keys it does not spell (missing, null, not a string, integer or
// boolean, which the schema's defaults or value comparison would decide)
// and duplicates.
func mergeKeyedList(s *smdschema.Schema, t *smdschema.List, lhs, rhs []any) ([]any, bool) {
	if t.ElementRelationship != smdschema.Associative || len(t.Keys) == 0 || len(lhs) == 0 || len(rhs) == 0 {
		return nil, false
	}
	lk, observedLHS, ok := indexByKey(t.Keys, lhs)
	if !ok {
		return nil, false
	}
	rk, observedRHS, ok := indexByKey(t.Keys, rhs)
	if !ok {
		return nil, false
	}
	var sharedOrder []string
	for _, k := range rk {
		if _, ok := observedLHS[k]; ok {
			sharedOrder = append(sharedOrder, k)
		}
	}
	nextShared, hasNext := "", false
	popShared := func() {
		hasNext = len(sharedOrder) > 0
		if hasNext {
			nextShared, sharedOrder = sharedOrder[0], sharedOrder[1:]
		}
	}
	popShared()
	mergedRHS := make(map[string]bool, len(rk))
	out := make([]any, 0, max(len(lhs), len(rhs)))
	appendMerged := func(l any, hasL bool, r any) bool {
		o, keep, ok := mergeNode(s, t.ElementType, l, hasL, r)
		if ok && keep {
			out = append(out, o)
		}
		return ok
	}
	for lI, rI := 0, 0; lI < len(lk) || rI < len(rk); {
		if lI < len(lk) && rI < len(rk) {
			pe := lk[lI]
			if pe == rk[rI] {
				mergedRHS[pe] = true
				if !appendMerged(observedLHS[pe], true, observedRHS[pe]) {
					return nil, false
				}
				lI++
				rI++
				nextShared, hasNext = "", false
				popShared()
				continue
			}
			if _, ok := observedRHS[pe]; ok && hasNext && nextShared != pe {
				lI++
				continue
			}
		}
		if lI < len(lk) {
			pe := lk[lI]
			if _, ok := observedRHS[pe]; !ok {
				// Merged with nothing, an item is itself.
				out = append(out, lhs[lI])
				lI++
				continue
			} else if mergedRHS[pe] {
				lI++
			}
		}
		if rI < len(rk) {
			pe := rk[rI]
			mergedRHS[pe] = true
			l, hasL := observedLHS[pe]
			if !appendMerged(l, hasL, observedRHS[pe]) {
				return nil, false
			}
			rI++
			if hasNext && nextShared == pe {
				popShared()
			}
		}
	}
	return out, true
}

// indexByKey is indexListPathElements for items whose keys spellKey spells;
// false on anything else, duplicates included.
func indexByKey(keys []string, items []any) ([]string, map[string]any, bool) {
	ks := make([]string, len(items))
	observed := make(map[string]any, len(items))
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, nil, false
		}
		k, ok := spellKey(keys, m)
		if !ok {
			return nil, nil, false
		}
		if _, dup := observed[k]; dup {
			return nil, nil, false
		}
		observed[k] = it
		ks[i] = k
	}
	return ks, observed, true
}

// spellKey spells an item's key fields as one string, each value typed and
// length-prefixed so that distinct keys never collide.
func spellKey(keys []string, m map[string]any) (string, bool) {
	if len(keys) == 1 {
		// The common case, a name; spelled as is, so no other type may
		// share the list.
		v, ok := m[keys[0]].(string)
		return v, ok
	}
	var b []byte
	for _, k := range keys {
		switch v := m[k].(type) {
		case string:
			b = append(b, 's')
			b = strconv.AppendInt(b, int64(len(v)), 10)
			b = append(b, ':')
			b = append(b, v...)
		case int64:
			b = append(b, 'i')
			b = strconv.AppendInt(b, v, 10)
			b = append(b, ';')
		case bool:
			b = append(b, 'b')
			b = strconv.AppendBool(b, v)
			b = append(b, ';')
		default:
			return "", false
		}
	}
	return string(b), true
}
