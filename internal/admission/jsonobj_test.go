package admission

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// parseObject must give exactly what the apimachinery JSON helpers give.
func checkSameAsApimachinery(t *testing.T, data []byte) {
	t.Helper()
	if !json.Valid(data) {
		if _, err := parseObject(data); err == nil {
			t.Fatalf("%q: parseObject accepted invalid JSON", data)
		}
		return
	}
	if firstNonSpace(data) != '{' {
		return // parseObject is only given objects
	}
	want, wantErr := evaluator.DecodeObject(data)
	got, gotErr := parseObject(data)
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("%q: apimachinery error %v, parseObject error %v", data, wantErr, gotErr)
	}
	if wantErr == nil && !reflect.DeepEqual(want, got) {
		t.Fatalf("%q:\napimachinery %#v\nparseObject  %#v", data, want, got)
	}
}

func firstNonSpace(b []byte) byte {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c
		}
	}
	return 0
}

func TestParseObjectMatchesApimachinery(t *testing.T) {
	pod, err := os.ReadFile("../../samples/baseline/pod.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, in string }{
		{"baseline pod", string(pod)},
		{"empty", `{}`},
		{"nested empties", `{"a":{},"b":[],"c":[{}],"d":null}`},
		{"numbers", `{"i":1,"n":-0,"f":1.0,"e":1e2,"E":-2.5E-3,"big":9223372036854775807,"bigger":9223372036854775808,"neg":-9223372036854775808,"huge":1e308}`},
		{"overflow", `{"x":1e400}`},
		{"duplicate keys keep the last", `{"a":1,"a":2,"b":{"c":1},"b":{"d":2}}`},
		{"escapes", `{"s":"a\"b\\c\/d\b\f\n\r\t","u":"\u00e9\u4e2d\ud83d\ude00","k\u0041":1}`},
		{"lone surrogates", `{"a":"\ud800","b":"\udc00x","c":"\ud800\u0041","d":"\ud800\ud800"}`},
		{"invalid UTF-8", "{\"a\":\"\xff\xfe ok \xc3\x28\",\"\xffk\":1}"},
		{"valid UTF-8", `{"a":"héllo wörld ✓"}`},
		{"whitespace", " \n\t{ \"a\" : [ 1 , 2 ] , \"b\" : true , \"c\" : false } \r\n"},
		{"deep", `{"a":[[[[[{"b":[1,[2,[3]]]}]]]]]}`},
		{"integers", `{"a":[0,-0,7,-7,123456789012345678,-123456789012345678,999999999999999999,1234567890123456789,-9223372036854775808,9223372036854775807,9223372036854775808,-9223372036854775809,255,256,-1,-256]}`},
		{"floats", `{"a":[0.0,-0.0,0.5,1e2,1E+2,1e-2,-1.5e-300,1e308,123456789012345678901234567890,4.9e-324,1e-400]}`},
		{"long arrays and objects", `{"a":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17],"b":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"a":11}}`},
		{"recurring and colliding strings", `{"a":["x","y","x","aab","abb","acb","aab","",""," ","x","0123456789012345678901234567890","01234567890123456789012345678901","012345678901234567890123456789012","012345678901234567890123456789012","\u0078","x\u0078"],"b":{"x":"aab","y":"acb","z":"abb"}}`},
		{"empties deep", `{"a":[[],{},[{}],{"b":[]}],"c":[[[[]]]]}`},
		{"invalid: trailing", `{"a":1}x`},
		{"invalid: trailing comma", `{"a":[1,]}`},
		{"invalid: number", `{"a":01}`},
		{"invalid: escape", `{"a":"\x"}`},
		{"invalid: control", "{\"a\":\"\t\"}"},
		{"invalid: unterminated", `{"a":[1,2`},
		{"invalid: literal", `{"a":nul}`},
	} {
		t.Run(tt.name, func(t *testing.T) { checkSameAsApimachinery(t, []byte(tt.in)) })
	}
}

// FuzzParseObject compares parseObject with the apimachinery decoder on
// every valid JSON object the fuzzer finds.
func FuzzParseObject(f *testing.F) {
	for _, s := range []string{`{"a":["x","y","x","aab","abb","acb","aab","","x"]}`, `{"a":1}`, `{"a":[1.5,"x\u00e9",null,true,{"b":-0}]}`, `{"\ud800":"\udc00"}`, "{\"a\":\"\xff\"}", `{"n":123456789012345678901234567890}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkSameAsApimachinery(t, data) })
}

func BenchmarkParseObject(b *testing.B) {
	pod, err := os.ReadFile("../../samples/baseline/pod.json")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("parseObject", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parseObject(pod); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("apimachinery", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := evaluator.DecodeObject(pod); err != nil {
				b.Fatal(err)
			}
		}
	})
}
