package objpatch

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// randomPointer is a JSON pointer into doc: mostly to a value it holds,
// sometimes one past it (a missing key, an index at or past the end,
// "-"), escaped as RFC 6901 says.
func randomPointer(r *rand.Rand, doc any) string {
	var b strings.Builder
	cur := doc
	for {
		switch x := cur.(type) {
		case map[string]any:
			if len(x) == 0 || r.IntN(4) == 0 {
				b.WriteString("/" + escapePointer([]string{"n", "a/b", "~"}[r.IntN(3)]))
				return b.String()
			}
			keys := sortedKeys(x)
			k := keys[r.IntN(len(keys))]
			b.WriteString("/" + escapePointer(k))
			cur = x[k]
		case []any:
			if len(x) == 0 || r.IntN(4) == 0 {
				b.WriteString("/" + []string{"-", strconv.Itoa(len(x)), strconv.Itoa(len(x) + 1), "01"}[r.IntN(4)])
				return b.String()
			}
			i := r.IntN(len(x))
			b.WriteString("/" + strconv.Itoa(i))
			cur = x[i]
		default:
			return b.String()
		}
		if r.IntN(3) == 0 {
			return b.String()
		}
	}
}

// TestApplyJSONPatchMatchesLibrary holds ApplyJSONPatch to the library the
// plugin's JSON patcher applies patches with, on random documents and
// operations: what it answers, the library answers alike, and it never
// modifies the document.
func TestApplyJSONPatchMatchesLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	answered := 0
	const cases = 5000
	for i := range cases {
		doc := map[string]any{"root": randomJSON(r, 4), "x": randomJSON(r, 3)}
		var ops []Op
		for range 1 + r.IntN(3) {
			op := Op{Op: []string{"add", "remove", "replace"}[r.IntN(3)], Path: randomPointer(r, doc)}
			if op.Op != "remove" {
				op.Value, op.HasValue = randomJSON(r, 2), true
			}
			ops = append(ops, op)
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			before, _ := json.Marshal(doc)
			patch, _ := json.Marshal(opsJSON(ops))
			got, ok := ApplyJSONPatch(doc, ops)
			if after, _ := json.Marshal(doc); string(after) != string(before) {
				t.Fatalf("the document changed: %s to %s", before, after)
			}
			if !ok {
				return
			}
			answered++
			p, err := jsonpatch.DecodePatch(patch)
			if err != nil {
				t.Fatal(err)
			}
			want, err := p.Apply(before)
			if err != nil {
				t.Fatalf("ApplyJSONPatch answered what the library refuses (%v): %s to %s", err, patch, before)
			}
			var w, g any
			_ = json.Unmarshal(want, &w)
			gb, _ := json.Marshal(got)
			_ = json.Unmarshal(gb, &g)
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("%s to %s\nApplyJSONPatch %s\nlibrary        %s", patch, before, gb, want)
			}
		})
	}
	// Most random operations are valid: a check that answers none tests
	// nothing.
	if answered < cases/3 {
		t.Errorf("ApplyJSONPatch answered %d of %d", answered, cases)
	}
}

// opsJSON is the patch document of ops, as the plugin hands it to the
// library.
func opsJSON(ops []Op) []map[string]any {
	out := make([]map[string]any, len(ops))
	for i, o := range ops {
		out[i] = map[string]any{"op": o.Op, "path": o.Path}
		if o.HasValue {
			out[i]["value"] = o.Value
		}
	}
	return out
}

// TestApplyJSONPatchDeclines lists what ApplyJSONPatch leaves to the
// exact path, each a case the library refuses or that it does not spell
// as the library would.
func TestApplyJSONPatchDeclines(t *testing.T) {
	doc := map[string]any{"a": map[string]any{"b": int64(1)}, "l": []any{"x", "y"}}
	for _, tc := range []struct {
		name string
		op   Op
	}{
		{"test", Op{Op: "test", Path: "/a", Value: "x", HasValue: true}},
		{"move", Op{Op: "move", Path: "/a"}},
		{"add without a value", Op{Op: "add", Path: "/c"}},
		{"relative path", Op{Op: "add", Path: "a", Value: "x", HasValue: true}},
		{"unprintable path", Op{Op: "add", Path: "/a\x01", Value: "x", HasValue: true}},
		{"remove of a missing key", Op{Op: "remove", Path: "/c"}},
		{"parent missing", Op{Op: "add", Path: "/c/d", Value: "x", HasValue: true}},
		{"index past the end", Op{Op: "add", Path: "/l/3", Value: "x", HasValue: true}},
		{"index with a leading zero", Op{Op: "replace", Path: "/l/01", Value: "x", HasValue: true}},
		{"negative index", Op{Op: "replace", Path: "/l/-1", Value: "x", HasValue: true}},
		{"into a scalar", Op{Op: "add", Path: "/a/b/c", Value: "x", HasValue: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := ApplyJSONPatch(doc, []Op{tc.op}); ok {
				t.Fatalf("answered %v", got)
			}
		})
	}
}
