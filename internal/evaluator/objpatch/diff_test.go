package objpatch

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// randomJSON is a random decoded JSON value of at most the given depth,
// with keys that need escaping.
func randomJSON(r *rand.Rand, depth int) any {
	k := r.IntN(7)
	if depth == 0 {
		k = r.IntN(4)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return float64(r.IntN(5))
	case 3:
		return []string{"a", "b", "", "x/y"}[r.IntN(4)]
	case 4:
		l := make([]any, r.IntN(4))
		for i := range l {
			l[i] = randomJSON(r, depth-1)
		}
		return l
	}
	m := map[string]any{}
	for range r.IntN(4) {
		m[[]string{"a", "b", "c/d", "e~f", "~1", "-", "0"}[r.IntN(7)]] = randomJSON(r, depth-1)
	}
	return m
}

// mutateJSON returns a changed copy of v.
func mutateJSON(r *rand.Rand, v any, depth int) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			switch r.IntN(5) {
			case 0: // omitted
			case 1:
				out[k] = mutateJSON(r, e, depth-1)
			default:
				out[k] = e
			}
		}
		if r.IntN(3) == 0 {
			out[[]string{"n", "c/d", "e~f", "~0"}[r.IntN(4)]] = randomJSON(r, depth-1)
		}
		return out
	case []any:
		var out []any
		for _, e := range x {
			if r.IntN(5) > 0 {
				out = append(out, mutateJSON(r, e, depth-1))
			}
		}
		for range r.IntN(3) {
			out = append(out, randomJSON(r, depth-1))
		}
		if out == nil {
			out = []any{}
		}
		return out
	}
	if r.IntN(2) == 0 {
		return randomJSON(r, depth)
	}
	return v
}

// TestDiffApplies holds Diff to the JSON patch library the apiserver
// applies webhook patches with: applying the patch to the first object
// gives the second.
func TestDiffApplies(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		a := map[string]any{"root": randomJSON(r, 4), "x": randomJSON(r, 3)}
		b := mutateJSON(r, a, 4).(map[string]any)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			ops := diffOps(a, b)
			doc, _ := json.Marshal(a)
			p, err := jsonpatch.DecodePatch(marshalPatch(ops))
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Apply(doc)
			if err != nil {
				t.Fatalf("%v: %s to %s", err, marshalPatch(ops), doc)
			}
			var got, want any
			_ = json.Unmarshal(out, &got)
			wb, _ := json.Marshal(b)
			_ = json.Unmarshal(wb, &want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("patch %s\nfrom %s\ngot  %s\nwant %s", marshalPatch(ops), doc, out, wb)
			}
			if jsonEqual(a, b) != (len(ops) == 0) {
				t.Fatalf("equal %v but %d ops", jsonEqual(a, b), len(ops))
			}
			if d := Diff(a, b); (d == nil) != (len(ops) == 0) || d != nil && string(d) != string(marshalPatch(ops)) {
				t.Fatalf("Diff %s, operations %s", d, marshalPatch(ops))
			}
		})
	}
}

// TestCarryOver carries a change over to the object as it was sent.
func TestCarryOver(t *testing.T) {
	tests := []struct {
		name                      string
		sent, before, after, want string
	}{
		{"unchanged keeps sent", `{"a":1}`, `{"a":1,"t":null}`, `{"a":1,"t":null}`, `{"a":1}`},
		{"changed key", `{"a":1,"u":2}`, `{"a":1}`, `{"a":3}`, `{"a":3,"u":2}`},
		{"removed key", `{"a":1,"b":2}`, `{"a":1,"b":2}`, `{"a":1}`, `{"a":1}`},
		{"added element keeps the others as sent", `{"l":[{"n":"a"}]}`, `{"l":[{"n":"a","r":{}}]}`, `{"l":[{"n":"a","r":{}},{"n":"b","r":{}}]}`, `{"l":[{"n":"a"},{"n":"b","r":{}}]}`},
		{"scalar replaced", `{"a":"x"}`, `{"a":"x"}`, `{"a":["y"]}`, `{"a":["y"]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sent, before, after, want any
			for _, p := range []struct {
				s string
				v *any
			}{{tc.sent, &sent}, {tc.before, &before}, {tc.after, &after}, {tc.want, &want}} {
				if err := json.Unmarshal([]byte(p.s), p.v); err != nil {
					t.Fatal(err)
				}
			}
			if got := CarryOver(sent, before, after); !jsonEqual(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
	}
}
