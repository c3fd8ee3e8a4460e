package evaluator

import (
	"reflect"
	"testing"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// The caching adapter must produce the same concrete CEL values as the
// default adapter, at every depth.
func TestCachingAdapterMatchesDefault(t *testing.T) {
	obj := map[string]any{
		"s": "x", "i": int64(3), "f": 1.5, "b": true, "n": nil,
		"empty": map[string]any{}, "nilmap": map[string]any(nil), "el": []any{},
		"spec": map[string]any{"containers": []any{
			map[string]any{"name": "a", "ports": []any{int64(80)}},
			map[string]any{"name": "b"},
		}},
	}
	a := newCachingAdapter()
	var walk func(path string, got, want ref.Val)
	walk = func(path string, got, want ref.Val) {
		if reflect.TypeOf(got) != reflect.TypeOf(want) || got.Type() != want.Type() || got.Equal(want) != types.True {
			t.Fatalf("%s: got %T %v, want %T %v", path, got, got, want, want)
		}
		switch w := want.(type) {
		case traits.Mapper:
			g := got.(traits.Mapper)
			if g.Size() != w.Size() {
				t.Fatalf("%s: size", path)
			}
			for it := w.Iterator(); it.HasNext() == types.True; {
				k := it.Next()
				walk(path+"."+k.(types.String).Value().(string), g.Get(k), w.Get(k))
			}
		case traits.Lister:
			g := got.(traits.Lister)
			if g.Size() != w.Size() {
				t.Fatalf("%s: size", path)
			}
			for i := types.Int(0); i < w.Size().(types.Int); i++ {
				walk(path+"[]", g.Get(i), w.Get(i))
			}
		}
	}
	got := a.NativeToValue(obj)
	walk("object", got, types.DefaultTypeAdapter.NativeToValue(obj))
	spec := got.(traits.Mapper).Get(types.String("spec"))
	if spec != got.(traits.Mapper).Get(types.String("spec")) {
		t.Fatal("nested map converted twice")
	}
	cs := spec.(traits.Mapper).Get(types.String("containers"))
	if cs != spec.(traits.Mapper).Get(types.String("containers")) {
		t.Fatal("nested list converted twice")
	}
}

func TestUnescapeMatchesTheApiserver(t *testing.T) {
	for _, s := range []string{"", "a", "team_name", "a_b_", "_x_", "x__dash__y", "__dot__", "__int__", "__if__x",
		"a__b", "__underscores__", "ünï__slash__cödé", "__", "___", "a__bogus__b"} {
		got, gotOK := unescape(s)
		want, wantOK := apiservercel.Unescape(s)
		if got != want || gotOK != wantOK {
			t.Errorf("unescape(%q) = %q %v, apiserver %q %v", s, got, gotOK, want, wantOK)
		}
	}
}
