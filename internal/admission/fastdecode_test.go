package admission

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// decodeBoth decodes body with the fast decoder and with the general one;
// they must agree on refusing it (always with a 400) or on every field.
// Invalid JSON anywhere gets the general decoder's syntax error.
func decodeBoth(t *testing.T, body []byte) {
	t.Helper()
	fast, fastErr := Decode(body)
	var ref *Review
	w, refErr := unmarshalReference(body)
	if refErr == nil {
		ref, refErr = fromWire(w)
	}
	if (fastErr != nil) != (refErr != nil) {
		t.Fatalf("%q:\nfast error:      %v\nreference error: %v", body, fastErr, refErr)
	}
	if !json.Valid(body) {
		if _, err := unmarshalReference(body); errString(fastErr) != errString(err) {
			t.Fatalf("%q is not valid JSON:\nfast error:      %v\nreference error: %v", body, fastErr, err)
		}
	} else if _, err := parseWire(body); err == errSyntax {
		t.Fatalf("%q is valid JSON, but the parser found a syntax error", body)
	}
	if fastErr != nil {
		if e, ok := fastErr.(*fault.Error); !ok || e.Code != fault.BadRequest {
			t.Fatalf("%q: fast refusal %v is not a 400", body, fastErr)
		}
		return
	}
	if !reflect.DeepEqual(fast, ref) {
		t.Fatalf("%q:\nfast      %#v\nreference %#v", body, fast.Request, ref.Request)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

var decodeSeeds = []string{
	// A repeated object: only the last counts, even when an earlier one
	// cannot be decoded.
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"operation":"CREATE","object":{"a":1e400},"object":{"a":1},"oldObject":{"b":[1e400]},"oldObject":null}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"operation":"UPDATE","object":{"a":1},"oldObject":{"a":{"b":-1e999,"c":[1,2]}}}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"requestKind":{"group":"","version":"v1","kind":"Pod"},"requestResource":{"group":"","version":"v1","resource":"pods"},"requestSubResource":"","subResource":"","name":"a","namespace":"b","operation":"CREATE","userInfo":{"username":"alice","uid":"1","groups":["g1","g2"],"extra":{"k":["v"],"e":[]}},"object":{"a":[1,2.5,"x",null,true,{}]},"oldObject":null,"dryRun":true,"options":{"apiVersion":"meta.k8s.io/v1","kind":"CreateOptions","dryRun":["All"]}}}`,
	`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"subResource":"status","operation":"UPDATE","object":{"x":1},"oldObject":{"x":2}}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"operation":"DELETE","oldObject":{"x":2},"object":"bad","object":{"y":1}}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"a","name":"n"},"request":{"uid":"b","kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"operation":"CREATE"}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":null,"uid":"u","userInfo":{"extra":{"a":["1"]},"extra":{"b":null},"groups":["x"],"groups":null},"kind":{"version":"v1","kind":"Pod"},"kind":{"group":"apps"},"requestKind":null,"resource":{"version":"v1","resource":"pods"},"operation":"CONNECT","dryRun":null,"options":null,"unknown":[1,{"a":2}]}}`,
	`{"APIVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u"}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","userInfo":{"groups":["a",null,"b"]},"kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"operation":"CREATE","object":{"s":"\ud800\u00e9\n"}}}`,
	`[]`, `null`, `{}`, `{"request":[]}`, `{"request":{"uid":5}}`, `{"request":{"dryRun":"yes","uid":"u"}}`,
	`{"apiVersion":1}`, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"operation":"CREATE","object":{"n":1e400}}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"operation":"CREATE","object":{"n":[0,-0,7,-7,123456789012345678,-123456789012345678,1234567890123456789,-9223372036854775808,9223372036854775807,9223372036854775808,-9223372036854775809,0.5,-0.0,1e2,1E+2,1e-2,255,256,-1]}}}`,
	" \t\r\n{ \"apiVersion\" : \"admission.k8s.io/v1\" , \"kind\":\"AdmissionReview\",\"request\" : { \"uid\" : \"u\" , \"kind\" : { \"version\" : \"v1\" , \"kind\" : \"Pod\" } , \"resource\":{\"version\":\"v1\",\"resource\":\"pods\"},\"operation\":\"CREATE\",\"userInfo\" : { \"groups\" : [ \"a\" , null ] , \"extra\" : { \"k\" : [ ] } } , \"dryRun\" : false , \"object\" : { \"a\" : [ 1 , { } , [ ] ] } , \"x\" : [ { \"y\" : [ 1 , \"\\u0041\" ] } ] } } \n",
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"operation":"CREATE","object":{"k\u0041":"\\\/\"\b\f\n\r\t","\u00e9":1},"kind":{"kind":"P\u006fd"}}}`,
}

// invalidJSON are bodies with a syntax error somewhere: Decode must give
// the general decoder's error for each, as it did when it ran json.Valid
// first.
var invalidJSON = func() []string {
	const head = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"operation":"CREATE",`
	// bad values, each invalid wherever a value may stand
	bad := []string{
		``, `01`, `-01`, `1.`, `.5`, `-`, `--1`, `+1`, `1e`, `1e+`, `1E-`, `1.e5`, `0x10`, `1.5.5`, `1e5e5`, `Infinity`, `NaN`,
		`tru`, `true1`, `True`, `nul`, `nulll`, `fals`, `falsey`, `n`, `t`, `f`,
		`"abc`, `"a\x"`, `"a\u12"`, `"a\u12g4"`, `"a\'"`, "\"a\tb\"", "\"a\nb\"", "\"\x00\"", "\"\x1f\"", `"\`, `"\u`,
		`{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,"a":1}`, `{"a":1 "b":2}`, `{"a" 1}`, `{a:1}`, `{'a':1}`, `{1:1}`, `{"a":1]`, `{"a":1`,
		`[`, `[1,]`, `[,1]`, `[1 2]`, `[1}`, `[1`, `[1,`, `]`, `}`, `:`, `,`, `[[[]]`, `{"a":[}`, `'x'`, "\xff",
	}
	var out []string
	for _, b := range bad {
		for _, s := range []string{
			head + `"object":` + b + `}}`,                              // as request.object
			head + `"object":{"a":` + b + `}}}`,                        // inside request.object
			head + `"oldObject":{"a":[1,` + b + `]}}}`,                 // inside request.oldObject
			head + `"unknown":` + b + `}}`,                             // a skipped field
			head + `"unknown":{"x":[` + b + `]}}}`,                     // deep in a skipped field
			head + `"options":` + b + `}}`,                             // request.options
			head + `"options":{"dryRun":[` + b + `]}}}`,                // inside request.options
			head + `"uid":` + b + `}}`,                                 // a string field
			head + `"kind":{"kind":` + b + `}}}`,                       // a GroupVersionKind field
			head + `"dryRun":` + b + `}}`,                              // a boolean field
			head + `"userInfo":{"groups":[` + b + `]}}}`,               // a list of strings
			head + `"userInfo":{"extra":{"k":` + b + `}}}}`,            // an extra value
			`{"unknown":` + b + `,"apiVersion":"admission.k8s.io/v1"}`, // top level
			head + `"object":{}}}` + b,                                 // after the review
			head + `"object":{}}} ` + b,
			head + `"object":{}}` + b + `}`, // between closing braces
		} {
			if !json.Valid([]byte(s)) {
				out = append(out, s)
			}
		}
	}
	out = append(out,
		``, ` `, `{`, `{"apiVersion"`, `{"apiVersion":`, `{"apiVersion":"admission.k8s.io/v1"`, `{"apiVersion":"admission.k8s.io/v1",`,
		`{"apiVersion":"admission.k8s.io/v1"}}`, `{"apiVersion":"admission.k8s.io/v1"}{}`, `{} {}`, `{}x`, `{}]`, `null null`, `[] x`,
		`{"request":[],x}`, `{"request":{"uid":5,}}`, `{"request":{"uid":"u"`, `{"request":{"dryRun":"yes",,"uid":"u"}}`,
		`{"apiVersion":1,}`, `{"apiVersion":nul}`, `{"kind":"AdmissionReview" "apiVersion":"x"}`, `{"kind""AdmissionReview"}`,
		`{"request":{"object":{"n":1e400,}}}`, `{"request":{"object":{"n":1e400},"oldObject":{"a"}}}`,
		`{"request":{"userInfo":{"groups":[1,]}}}`, `{"request":{"userInfo":{"groups":"x","extra":{]}}}`,
		`{"request":{"kind":[],"x":tru}}`, `{"request":{"object":[1,2},"oldObject":{}}}`, `{"request":{"object":"bad","y":[}}`,
		"{\"a\":\"\x00\"}", "\x00{}", "{}\x00", "\ufeff{}",
	)
	return out
}()

func TestDecodeInvalidJSON(t *testing.T) {
	for _, s := range invalidJSON {
		body := []byte(s)
		if json.Valid(body) {
			t.Errorf("%q: table case is valid JSON", body)
			continue
		}
		_, want := unmarshalReference(body)
		if _, err := parseWire(body); err == nil {
			t.Errorf("%q: the parser accepted invalid JSON", body)
		}
		if _, got := Decode(body); errString(got) != errString(want) {
			t.Errorf("%q:\nDecode error:    %v\nreference error: %v", body, got, want)
		}
		decodeBoth(t, body)
	}
}

// nest puts v in depth arrays.
func nest(depth int, v string) string {
	return strings.Repeat("[", depth) + v + strings.Repeat("]", depth)
}

// TestDecodeNestingLimit: encoding/json refuses values nested deeper than
// 10000; so does the parser, wherever the value is.
func TestDecodeNestingLimit(t *testing.T) {
	const head = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"operation":"CREATE",`
	for _, extra := range []int{-1, 0, 1} {
		n := 10000 - 2 + extra // the review and its request hold 2 levels
		for _, body := range []string{
			head + `"unknown":` + nest(n, `1`) + `}}`,
			head + `"options":` + nest(n, ``) + `}}`,
			head + `"object":{"a":` + nest(n-2, `{}`) + `}}}`,
			head + `"oldObject":{"a":` + nest(n-1, `"x"`) + `}}}`,
			head + `"userInfo":{"extra":{"k":` + nest(n-2, ``) + `}}}}`,
			head + `"userInfo":{"groups":` + nest(n-1, ``) + `}}}`,
			head + `"kind":` + nest(n, ``) + `}}`,
		} {
			decodeBoth(t, []byte(body))
			if json.Valid([]byte(body)) != (extra <= 0) {
				t.Fatalf("depth %d: json.Valid is %v", n+2, extra > 0)
			}
		}
	}
}

func TestFastDecodeMatchesReference(t *testing.T) {
	for _, s := range decodeSeeds {
		decodeBoth(t, []byte(s))
	}
}

// FuzzFastDecode compares the fast decoder with the general one.
func FuzzFastDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	for _, s := range invalidJSON[:200] {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { decodeBoth(t, body) })
}

// TestDecodeObjectValueErrors: an object whose numbers the evaluator cannot
// hold is refused with the general decoder's words, and only when it is
// the last value of its field.
func TestDecodeObjectValueErrors(t *testing.T) {
	head := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"operation":"UPDATE",`
	for _, tc := range []struct{ body, want string }{
		{head + `"object":{"a":1e400}}}`, "request.object: "},
		{head + `"object":{"a":1},"oldObject":{"a":[1e400]}}}`, "request.oldObject: "},
		{head + `"object":{"a":1e400},"object":{"a":1}}}`, ""},
		{head + `"object":{"a":1},"object":{"a":1e400},"x":[1]}}`, "request.object: "},
		// A refused object deep in nesting must not count against the
		// nesting limit of what follows.
		{head + `"object":{"a":` + strings.Repeat("[", 5100) + `1e400` + strings.Repeat("]", 5100) + `},"object":{"a":1}}}`, ""},
		{head + strings.Repeat(`"object":{"a":`+strings.Repeat("[", 3000)+`1e400`+strings.Repeat("]", 3000)+`},`, 4) + `"object":{"a":1}}}`, ""},
	} {
		if _, err := parseWire([]byte(tc.body)); err == errSyntax {
			t.Errorf("%.80s...: the parser found a syntax error in valid JSON", tc.body)
		}
		_, fastErr := Decode([]byte(tc.body))
		w, refErr := unmarshalReference([]byte(tc.body))
		if refErr == nil {
			_, refErr = fromWire(w)
		}
		if errString(fastErr) != errString(refErr) {
			t.Errorf("%s:\nfast      %v\nreference %v", tc.body, fastErr, refErr)
		}
		if (tc.want == "") != (fastErr == nil) || !strings.HasPrefix(errString(fastErr)+"", tc.want) {
			t.Errorf("%s: error %v, want prefix %q", tc.body, fastErr, tc.want)
		}
	}
}
