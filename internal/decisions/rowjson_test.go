package decisions

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestRowJSONMatchesEncodingJSON: the hand-written JSON columns decode to
// what encoding/json's encoding of the same values decodes to.
func TestRowJSONMatchesEncodingJSON(t *testing.T) {
	tricky := []string{"", "plain", `quo"te`, `back\slash`, "new\nline\r\ttab", "\x01\x1f\x7f", "ünï€😀", "<html>&amp;", "\u2028\u2029", "a\x00b", "bad\xffutf8"}
	var anns []AuditAnnotation
	var bs []BindingRecord
	for i, s := range tricky {
		anns = append(anns, AuditAnnotation{Key: s, Value: tricky[len(tricky)-1-i]})
		bs = append(bs, BindingRecord{Policy: s, Binding: "b" + s, Param: s, Outcome: "Violation",
			Denied: i%2 == 0, FailurePolicyApplied: i%3 == 0, Timeout: i%4 == 0, Error: s, Messages: tricky[:i%4],
			Mutated: i%2 == 1, Reinvoked: i%5 == 0})
	}
	anns = append(anns, AuditAnnotation{Key: "plain", Value: "last wins"})
	bs = append(bs, BindingRecord{Policy: "nil messages"})

	want := map[string]string{}
	for _, a := range anns {
		want[clean(a.Key)] = clean(a.Value)
	}
	sameJSON(t, annotationsJSON(anns), want)
	sameJSON(t, annotationsJSON(nil), map[string]string{})
	sameJSON(t, bindingsJSON(bindingRecords(bs)), bindingRecords(bs))
	sameJSON(t, bindingsJSON(nil), []BindingRecord{})
}

func sameJSON(t *testing.T, got []byte, want any) {
	t.Helper()
	if !json.Valid(got) {
		t.Fatalf("invalid JSON: %s", got)
	}
	ref, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(ref, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("got %s\nencoding/json %s", got, ref)
	}
}

// SetPatch keeps a patch within the bound as it is, and cuts a longer one
// at a character boundary into a copy of its own, flagged.
func TestSetPatch(t *testing.T) {
	small := []byte(`[{"op":"remove","path":"/a"}]`)
	var d Decision
	d.SetPatch(small)
	if &d.Patch[0] != &small[0] || d.PatchTruncated {
		t.Fatalf("a small patch was copied or flagged: %s %v", d.Patch, d.PatchTruncated)
	}
	d.SetPatch(nil)
	if d.Patch != nil || d.PatchTruncated {
		t.Fatalf("nil patch: %q %v", d.Patch, d.PatchTruncated)
	}
	for _, tail := range []string{"x", "€", "😀😀"} {
		big := []byte(strings.Repeat("a", MaxPatchBytes-1) + tail + "}]")
		d.SetPatch(big)
		if !d.PatchTruncated || len(d.Patch) > MaxPatchBytes || !utf8.Valid(d.Patch) || !bytes.HasPrefix(big, d.Patch) {
			t.Fatalf("tail %q: %d bytes kept, valid %v, flagged %v", tail, len(d.Patch), utf8.Valid(d.Patch), d.PatchTruncated)
		}
		if cap(d.Patch) > MaxPatchBytes {
			t.Fatalf("tail %q: the cut patch holds the whole answer (cap %d)", tail, cap(d.Patch))
		}
	}
}
