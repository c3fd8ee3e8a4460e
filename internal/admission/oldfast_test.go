// This file keeps the fast decoder as it was before it checked the syntax
// itself (commit a860f58, which ran json.Valid first), as an oracle: the
// decoder must still answer exactly as it did, errors included.

package admission

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// oldUnmarshalWire fills a wire from body in one pass over the bytes after
// one validity scan, building the objects straight into the evaluator's
// form. It keeps the general decoder's semantics (unmarshalReference):
// field names are case-sensitive, unknown fields are ignored, null leaves a
// field at its zero value, a repeated field is decoded again into the same
// place (so repeated structs merge, as encoding/json does), and a value of
// the wrong type is refused. A differential fuzz test holds the two
// together.
func oldUnmarshalWire(body []byte) (*wire, error) {
	if !json.Valid(body) {
		return unmarshalReference(body) // for its wording of the syntax error
	}
	p := &oldParser{data: body}
	w := &wire{}
	err := p.fields("AdmissionReview", func(key string) error {
		switch key {
		case "apiVersion":
			return p.stringInto(&w.APIVersion, "apiVersion")
		case "kind":
			return p.stringInto(&w.Kind, "kind")
		case "request":
			if p.null() {
				w.Request = nil
				return nil
			}
			if w.Request == nil {
				w.Request = &wireRequest{parsed: true}
			}
			return p.request(w.Request)
		}
		return p.skip()
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

func oldTypeError(field, want string) error {
	return badRequest("the body is not a valid AdmissionReview: %s must be %s", field, want)
}

// fields walks the object at p, calling fn with p at each value; fn must
// consume the value.
func (p *oldParser) fields(name string, fn func(key string) error) error {
	p.skipSpace()
	if p.data[p.pos] != '{' {
		return oldTypeError(name, "a JSON object")
	}
	p.pos++
	for {
		p.skipSpace()
		if p.data[p.pos] == '}' {
			p.pos++
			return nil
		}
		if p.data[p.pos] == ',' {
			p.pos++
			p.skipSpace()
		}
		key, err := p.str()
		if err != nil {
			return err
		}
		p.skipSpace()
		p.pos++ // :
		p.skipSpace()
		if err := fn(key); err != nil {
			return err
		}
	}
}

// null consumes a JSON null if one is next.
func (p *oldParser) null() bool {
	if p.data[p.pos] == 'n' {
		p.pos += 4
		return true
	}
	return false
}

// skip passes over one (valid) value without building it, as the general
// decoder does for fields it does not know: nothing in it can fail.
func (p *oldParser) skip() error {
	depth := 0
	for {
		switch c := p.data[p.pos]; c {
		case '"':
			p.pos++
			for p.data[p.pos] != '"' {
				if p.data[p.pos] == '\\' {
					p.pos++
				}
				p.pos++
			}
			p.pos++
		case '{', '[':
			depth++
			p.pos++
		case '}', ']':
			depth--
			p.pos++
		default:
			p.pos++
			if c != ',' && c != ':' && c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				// a literal or number: read to its end
				for p.pos < len(p.data) && !oldIsDelim(p.data[p.pos]) {
					p.pos++
				}
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

func oldIsDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r', ':':
		return true
	}
	return false
}

func (p *oldParser) stringInto(dst *string, field string) error {
	if p.null() {
		return nil
	}
	if p.data[p.pos] != '"' {
		return oldTypeError(field, "a string")
	}
	s, err := p.str()
	*dst = s
	return err
}

func (p *oldParser) request(r *wireRequest) error {
	return p.fields("request", func(key string) error {
		switch key {
		case "uid":
			return p.stringInto((*string)(&r.UID), "request.uid")
		case "kind":
			return p.gvk(&r.Kind, "request.kind")
		case "resource":
			return p.gvr(&r.Resource, "request.resource")
		case "subResource":
			return p.stringInto(&r.SubResource, "request.subResource")
		case "requestKind":
			if p.null() {
				r.RequestKind = nil
				return nil
			}
			if r.RequestKind == nil {
				r.RequestKind = &metav1.GroupVersionKind{}
			}
			return p.gvk(r.RequestKind, "request.requestKind")
		case "requestResource":
			if p.null() {
				r.RequestResource = nil
				return nil
			}
			if r.RequestResource == nil {
				r.RequestResource = &metav1.GroupVersionResource{}
			}
			return p.gvr(r.RequestResource, "request.requestResource")
		case "requestSubResource":
			return p.stringInto(&r.RequestSubResource, "request.requestSubResource")
		case "name":
			return p.stringInto(&r.Name, "request.name")
		case "namespace":
			return p.stringInto(&r.Namespace, "request.namespace")
		case "operation":
			return p.stringInto(&r.Operation, "request.operation")
		case "userInfo":
			if p.null() {
				return nil
			}
			return p.userInfo(&r.UserInfo)
		case "object":
			m, bad, err := p.objectValue()
			r.object, r.objectBad = m, bad
			return err
		case "oldObject":
			m, bad, err := p.objectValue()
			r.oldObject, r.oldObjBad = m, bad
			return err
		case "dryRun":
			switch p.data[p.pos] {
			case 'n':
				p.pos += 4
				r.DryRun = nil
			case 't', 'f':
				v := p.data[p.pos] == 't'
				_ = p.skip()
				r.DryRun = &v
			default:
				return oldTypeError("request.dryRun", "a boolean")
			}
			return nil
		case "options":
			start := p.pos
			if err := p.skip(); err != nil {
				return err
			}
			r.Options = json.RawMessage(p.data[start:p.pos])
			return nil
		}
		return p.skip()
	})
}

// objectValue reads request.object or request.oldObject: an object, or
// null. Any other value is remembered as bad rather than refused at once,
// because a later repetition of the field would replace it.
func (p *oldParser) objectValue() (map[string]any, bool, error) {
	switch p.data[p.pos] {
	case 'n':
		p.pos += 4
		return nil, false, nil
	case '{':
		m, err := p.object()
		if err != nil {
			return nil, false, badRequest("%v", err)
		}
		return m, false, nil
	}
	return nil, true, p.skip()
}

func (p *oldParser) gvk(dst *metav1.GroupVersionKind, field string) error {
	return p.stringFields(field, [3]string{"group", "version", "kind"}, [3]*string{&dst.Group, &dst.Version, &dst.Kind})
}

func (p *oldParser) gvr(dst *metav1.GroupVersionResource, field string) error {
	return p.stringFields(field, [3]string{"group", "version", "resource"}, [3]*string{&dst.Group, &dst.Version, &dst.Resource})
}

// stringFields reads an object whose fields of interest are all strings
// (a GroupVersionKind or GroupVersionResource), or null. Field paths for
// errors are built only on an error, off the common path.
func (p *oldParser) stringFields(field string, names [3]string, dst [3]*string) error {
	if p.null() {
		return nil
	}
	return p.fields(field, func(key string) error {
		for i, n := range names {
			if key != n {
				continue
			}
			if p.null() {
				return nil
			}
			if p.data[p.pos] != '"' {
				return oldTypeError(field+"."+n, "a string")
			}
			s, err := p.str()
			*dst[i] = s
			return err
		}
		return p.skip()
	})
}

func (p *oldParser) userInfo(u *authenticationv1.UserInfo) error {
	return p.fields("request.userInfo", func(key string) error {
		switch key {
		case "username":
			return p.stringInto(&u.Username, "request.userInfo.username")
		case "uid":
			return p.stringInto(&u.UID, "request.userInfo.uid")
		case "groups":
			if p.null() {
				u.Groups = nil
				return nil
			}
			groups, err := p.stringList("request.userInfo.groups")
			u.Groups = groups
			return err
		case "extra":
			if p.null() {
				u.Extra = nil
				return nil
			}
			if u.Extra == nil {
				u.Extra = map[string]authenticationv1.ExtraValue{}
			}
			return p.fields("request.userInfo.extra", func(k string) error {
				if p.null() {
					u.Extra[k] = nil
					return nil
				}
				vals, err := p.stringList("request.userInfo.extra")
				u.Extra[k] = vals
				return err
			})
		}
		return p.skip()
	})
}

func (p *oldParser) stringList(field string) ([]string, error) {
	if p.data[p.pos] != '[' {
		return nil, oldTypeError(field, "a list of strings")
	}
	p.pos++
	out := []string{}
	for {
		p.skipSpace()
		switch p.data[p.pos] {
		case ']':
			p.pos++
			return out, nil
		case ',':
			p.pos++
			p.skipSpace()
		}
		if p.data[p.pos] == 'n' { // null element: the zero value
			p.pos += 4
			out = append(out, "")
			continue
		}
		if p.data[p.pos] != '"' {
			return nil, oldTypeError(field, "a list of strings")
		}
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
}

// oldParseObject decodes one JSON object into the form the evaluator reads,
// with the apimachinery JSON helpers' semantics (sigs.k8s.io/json with
// PreserveInts): objects become map[string]any (a repeated key keeps its
// last value), arrays []any, integers that fit int64 become int64, other
// numbers float64 (out of range is an error), strings are unescaped as
// encoding/json does (invalid UTF-8 and lone surrogates become U+FFFD).
//
// It is several times faster than the general decoder because it only
// builds these few types. Its input must already be valid JSON: Decode
// runs it on values the envelope decoder has validated. A differential
// fuzz test holds it to the apimachinery decoder's results.
func oldParseObject(data []byte) (map[string]any, error) {
	p := oldParser{data: data}
	p.skipSpace()
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON object")
	}
	return m, nil
}

type oldParser struct {
	data []byte
	pos  int
}

func (p *oldParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *oldParser) value() (any, error) {
	if p.pos >= len(p.data) {
		return nil, fmt.Errorf("unexpected end of JSON input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.str()
	case c == 't':
		p.pos += 4
		return true, nil
	case c == 'f':
		p.pos += 5
		return false, nil
	case c == 'n':
		p.pos += 4
		return nil, nil
	default:
		return p.number()
	}
}

func (p *oldParser) object() (map[string]any, error) {
	p.pos++ // {
	m := make(map[string]any)
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return m, nil
	}
	for {
		p.skipSpace()
		k, err := p.key()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		p.pos++ // :
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		m[k] = v
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, fmt.Errorf("unexpected end of JSON input")
		}
		c := p.data[p.pos]
		p.pos++
		if c == '}' {
			return m, nil
		}
	}
}

func (p *oldParser) array() ([]any, error) {
	p.pos++ // [
	a := make([]any, 0, 4)
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return a, nil
	}
	for {
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, fmt.Errorf("unexpected end of JSON input")
		}
		c := p.data[p.pos]
		p.pos++
		if c == ']' {
			return a, nil
		}
	}
}

func (p *oldParser) number() (any, error) {
	start := p.pos
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			p.pos++
			continue
		}
		break
	}
	s := string(p.data[start:p.pos])
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("json: cannot unmarshal number %s into Go value of type float64", s)
	}
	return f, nil
}

// key reads an object key: common ones without allocating.
func (p *oldParser) key() (string, error) {
	if p.pos < len(p.data) && p.data[p.pos] == '"' {
		end := p.pos + 1
		for end < len(p.data) && p.data[end] != '"' && p.data[end] != '\\' && p.data[end] < utf8.RuneSelf {
			end++
		}
		if end < len(p.data) && p.data[end] == '"' {
			k := oldKey(p.data[p.pos+1 : end])
			p.pos = end + 1
			return k, nil
		}
	}
	return p.str()
}

// str reads a string starting at its opening quote.
func (p *oldParser) str() (string, error) {
	if p.pos >= len(p.data) || p.data[p.pos] != '"' {
		return "", fmt.Errorf("expected a string at offset %d", p.pos)
	}
	p.pos++
	start := p.pos
	ascii := true
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			s := p.data[start:p.pos]
			p.pos++
			if ascii || utf8.Valid(s) {
				return string(s), nil
			}
			return oldUnquoteSlow(s), nil
		case c == '\\':
			return p.strEscaped(start)
		case c >= utf8.RuneSelf:
			ascii = false
		}
		p.pos++
	}
	return "", fmt.Errorf("unexpected end of JSON input")
}

// strEscaped finishes a string that has escapes.
func (p *oldParser) strEscaped(start int) (string, error) {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case '\\':
			p.pos += 2
			continue
		case '"':
			s := p.data[start:p.pos]
			p.pos++
			return oldUnquoteSlow(s), nil
		}
		p.pos++
	}
	return "", fmt.Errorf("unexpected end of JSON input")
}

// oldUnquoteSlow decodes the body of a valid JSON string as encoding/json
// does.
func oldUnquoteSlow(s []byte) string {
	b := make([]byte, 0, len(s)+utf8.UTFMax)
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			r++
			switch s[r] {
			case '"', '\\', '/', '\'':
				b = append(b, s[r])
				r++
			case 'b':
				b = append(b, '\b')
				r++
			case 'f':
				b = append(b, '\f')
				r++
			case 'n':
				b = append(b, '\n')
				r++
			case 'r':
				b = append(b, '\r')
				r++
			case 't':
				b = append(b, '\t')
				r++
			case 'u':
				rr := oldGetu4(s[r-1:])
				r += 5
				if utf16.IsSurrogate(rr) {
					if r+6 <= len(s) && s[r] == '\\' && s[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, oldGetu4(s[r:])); dec != unicode.ReplacementChar {
							r += 6
							b = utf8.AppendRune(b, dec)
							break
						}
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			if rr == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, unicode.ReplacementChar)
			} else {
				b = append(b, s[r:r+size]...)
			}
			r += size
		}
	}
	return string(b)
}

// oldGetu4 decodes a \u escape with its four hex digits at the start of s;
// it returns -1 when s does not start with one.
func oldGetu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

func oldKey(b []byte) string { return string(b) }
