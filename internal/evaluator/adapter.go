package evaluator

import (
	"reflect"
	"unsafe"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// cachingAdapter converts a request's decoded object (and oldObject) into
// CEL values exactly as types.DefaultTypeAdapter does: the same concrete
// values (NewStringInterfaceMap for map[string]any, NewDynamicList for
// []any, the default conversion for everything else). The only difference
// is that the nested maps and lists it creates use it as their adapter and
// it remembers, for one request, the value made for each nested map or list,
// so that the many expressions reading object.spec.containers do not wrap
// the same native maps and slices again on every access. CEL values are
// immutable and these conversions are pure, so reusing them cannot be
// observed; costs depend only on sizes, which are unchanged.
type cachingAdapter struct {
	cache map[adapterKey]ref.Val
}

type adapterKey struct {
	p unsafe.Pointer
	n int // slice length; -1 for maps
}

func newCachingAdapter() *cachingAdapter {
	return &cachingAdapter{cache: make(map[adapterKey]ref.Val, 32)}
}

func (a *cachingAdapter) NativeToValue(value any) ref.Val {
	switch v := value.(type) {
	case map[string]any:
		if v == nil {
			return types.NewStringInterfaceMap(a, v)
		}
		k := adapterKey{p: reflect.ValueOf(v).UnsafePointer(), n: -1}
		if c, ok := a.cache[k]; ok {
			return c
		}
		c := types.NewStringInterfaceMap(a, v)
		a.cache[k] = c
		return c
	case []any:
		if len(v) == 0 {
			return types.NewDynamicList(a, v)
		}
		k := adapterKey{p: unsafe.Pointer(unsafe.SliceData(v)), n: len(v)}
		if c, ok := a.cache[k]; ok {
			return c
		}
		c := types.NewDynamicList(a, v)
		a.cache[k] = c
		return c
	}
	return types.DefaultTypeAdapter.NativeToValue(value)
}
