package evaluator

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// varMap is the plugin's lazy "variables" map (k8s.io/apiserver/pkg/cel/lazy
// MapValue, as composition.go builds it per evaluation) re-implemented
// method for method, with the same type value, lookups, memoisation,
// iteration (which, as lazy's iterator does, yields values) and errors. It
// differs only in how it is stored: the names and their index are the
// policy's, built once at compile time, and one frame's values are a slice,
// instead of two maps and one closure per variable on every evaluation.
type varMap struct {
	typeValue *types.Type
	f         *frame
	vars      []compiledVariable
	index     map[string]int
	values    []ref.Val
	seen      []bool
}

var (
	_ ref.Val       = (*varMap)(nil)
	_ traits.Mapper = (*varMap)(nil)
)

func newVarMap(f *frame, vars []compiledVariable, index map[string]int) *varMap {
	m := &varMap{
		//lint:ignore SA1019 the same type value k8s.io/apiserver's lazy.MapValue uses, so variables behave alike
		typeValue: types.NewTypeValue(variablesType.TypeName(), traits.IndexerType|traits.FieldTesterType|traits.IterableType),
		f:         f,
		vars:      vars,
		index:     index,
	}
	if n := len(vars); n > 0 {
		m.values = make([]ref.Val, n)
		m.seen = make([]bool, n)
	}
	return m
}

func (m *varMap) Contains(key ref.Val) ref.Val {
	v, found := m.Find(key)
	if v != nil && types.IsUnknownOrError(v) {
		return v
	}
	return types.Bool(found)
}

func (m *varMap) Iterator() traits.Iterator { return &varMapIterator{parent: m} }

func (m *varMap) Size() ref.Val { return types.Int(len(m.vars)) }

func (m *varMap) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nil, fmt.Errorf("disallowed conversion from %q to %q", m.typeValue.TypeName(), typeDesc.Name())
}

func (m *varMap) ConvertToType(typeVal ref.Type) ref.Val {
	switch typeVal {
	case m.typeValue:
		return m
	case types.TypeType:
		return m.typeValue
	}
	return types.NewErr("disallowed conversion from %q to %q", m.typeValue.TypeName(), typeVal.TypeName())
}

func (m *varMap) Equal(other ref.Val) ref.Val {
	otherMap, ok := other.(*varMap)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(m == otherMap)
}

func (m *varMap) Type() ref.Type { return m.typeValue }

func (m *varMap) Value() any { return types.NoSuchOverloadErr() }

func (m *varMap) resolve(i int) ref.Val {
	if m.seen[i] {
		return m.values[i]
	}
	v := m.f.variable(&m.vars[i], i)
	m.values[i], m.seen[i] = v, true
	return v
}

func (m *varMap) Find(key ref.Val) (ref.Val, bool) {
	n, ok := key.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(n), true
	}
	name, ok := unescape(string(n))
	if !ok {
		return nil, false
	}
	i, exists := m.index[name]
	if !exists {
		return nil, false
	}
	return m.resolve(i), true
}

func (m *varMap) Get(key ref.Val) ref.Val {
	v, found := m.Find(key)
	if found {
		return v
	}
	return types.ValOrErr(key, "no such key: %v", key)
}

type varMapIterator struct {
	parent *varMap
	index  int
}

func (i *varMapIterator) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nil, fmt.Errorf("disallowed conversion to %q", typeDesc.Name())
}

func (i *varMapIterator) ConvertToType(typeValue ref.Type) ref.Val {
	return types.NewErr("disallowed conversion o %q", typeValue.TypeName())
}

func (i *varMapIterator) Equal(other ref.Val) ref.Val {
	otherIterator, ok := other.(*varMapIterator)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(otherIterator == i)
}

func (i *varMapIterator) Type() ref.Type { return types.IteratorType }

func (i *varMapIterator) Value() any { return nil }

func (i *varMapIterator) HasNext() ref.Val { return types.Bool(i.index < len(i.parent.vars)) }

func (i *varMapIterator) Next() ref.Val {
	ret := i.parent.Get(types.String(i.parent.vars[i.index].name))
	i.index++
	return ret
}

var _ traits.Iterator = (*varMapIterator)(nil)

// unescape is apiservercel.Unescape without its regular expression where
// it cannot match: every escape sequence contains "__", and a name without
// one comes back unchanged. Variable lookups are on the hot path.
func unescape(s string) (string, bool) {
	if !strings.Contains(s, "__") {
		return s, true
	}
	return apiservercel.Unescape(s)
}
