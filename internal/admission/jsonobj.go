package admission

import (
	"errors"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// errSyntax reports that the input is not valid JSON. The parser does not
// word syntax errors: Decode hands such a body to the general decoder,
// whose message it returns.
var errSyntax = errors.New("invalid JSON")

// maxDepth is encoding/json's nesting limit: json.Valid refuses a value
// nested deeper, so the parser does too.
const maxDepth = 10000

// parseObject decodes one JSON object into the form the evaluator reads,
// with the apimachinery JSON helpers' semantics (sigs.k8s.io/json with
// PreserveInts): objects become map[string]any (a repeated key keeps its
// last value), arrays []any, integers that fit int64 become int64, other
// numbers float64 (out of range is an error), strings are unescaped as
// encoding/json does (invalid UTF-8 and lone surrogates become U+FFFD).
//
// It is several times faster than the general decoder because it only
// builds these few types. It checks the syntax as it goes (errSyntax for
// invalid JSON). A differential fuzz test holds it to the apimachinery
// decoder's results.
func parseObject(data []byte) (map[string]any, error) {
	p := parser{data: data}
	p.skipSpace()
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, errSyntax
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON object")
	}
	return m, nil
}

type parser struct {
	data  []byte
	pos   int
	depth int // containers open at pos

	// recent holds strings already boxed, by a hash of their bytes: the
	// same values recur within an object and between object and oldObject.
	recent [64]boxed
}

// boxed is a string and the same string in an interface.
type boxed struct {
	s string
	v any
}

// peek returns the byte at pos, or 0 (never valid there) at the end.
func (p *parser) peek() byte {
	if p.pos < len(p.data) {
		return p.data[p.pos]
	}
	return 0
}

// next consumes what follows a member or an element: a comma (more
// follow) or the closing byte (done).
func (p *parser) next(closing byte) (done bool, err error) {
	p.skipSpace()
	switch p.peek() {
	case ',':
		p.pos++
		p.skipSpace()
		return false, nil
	case closing:
		p.pos++
		p.depth--
		return true, nil
	}
	return false, errSyntax
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// literal consumes lit if it is next.
func (p *parser) literal(lit string) bool {
	if len(p.data)-p.pos >= len(lit) && string(p.data[p.pos:p.pos+len(lit)]) == lit {
		p.pos += len(lit)
		return true
	}
	return false
}

// open enters a container whose opening byte is at pos.
func (p *parser) open() error {
	p.pos++
	p.depth++
	if p.depth > maxDepth {
		return errSyntax
	}
	return nil
}

func (p *parser) value() (any, error) {
	switch p.peek() {
	case '{':
		m, err := p.object()
		if err != nil {
			return nil, err
		}
		return m, nil
	case '[':
		a, err := p.array()
		if err != nil {
			return nil, err
		}
		return a, nil
	case '"':
		return p.strValue()
	case 't':
		if p.literal("true") {
			return true, nil
		}
	case 'f':
		if p.literal("false") {
			return false, nil
		}
	case 'n':
		if p.literal("null") {
			return nil, nil
		}
	default:
		return p.number()
	}
	return nil, errSyntax
}

func (p *parser) object() (map[string]any, error) {
	if err := p.open(); err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.peek() == '}' {
		p.pos++
		p.depth--
		return map[string]any{}, nil
	}
	m := make(map[string]any)
	for {
		k, err := p.key()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.peek() != ':' {
			return nil, errSyntax
		}
		p.pos++
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		m[k] = v
		if done, err := p.next('}'); err != nil {
			return nil, err
		} else if done {
			return m, nil
		}
	}
}

func (p *parser) array() ([]any, error) {
	if err := p.open(); err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.peek() == ']' {
		p.pos++
		p.depth--
		return []any{}, nil
	}
	a := make([]any, 0, 4)
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		if done, err := p.next(']'); err != nil {
			return nil, err
		} else if done {
			return a, nil
		}
	}
}

// scanNumber passes over a JSON number at pos. It reports whether the
// number is an integer (no fraction or exponent) and, when it has at most
// 18 digits, its magnitude.
func (p *parser) scanNumber() (neg, isInt, small bool, u uint64, err error) {
	d, i := p.data, p.pos
	if i < len(d) && d[i] == '-' {
		neg = true
		i++
	}
	switch {
	case i >= len(d):
		return false, false, false, 0, errSyntax
	case d[i] == '0':
		i++
		small = true
	case '1' <= d[i] && d[i] <= '9':
		start := i
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			u = u*10 + uint64(d[i]-'0')
			i++
		}
		small = i-start <= 18
	default:
		return false, false, false, 0, errSyntax
	}
	isInt = true
	if i < len(d) && d[i] == '.' {
		isInt = false
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return false, false, false, 0, errSyntax
		}
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		isInt = false
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return false, false, false, 0, errSyntax
		}
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
	}
	p.pos = i
	return neg, isInt, small, u, nil
}

func (p *parser) number() (any, error) {
	start := p.pos
	neg, isInt, small, u, err := p.scanNumber()
	if err != nil {
		return nil, err
	}
	if isInt && small {
		if neg {
			return -int64(u), nil
		}
		return int64(u), nil
	}
	b := p.data[start:p.pos]
	if isInt {
		if i, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			return i, nil
		}
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return nil, fmt.Errorf("json: cannot unmarshal number %s into Go value of type float64", b)
	}
	return f, nil
}

// plain marks the bytes a string can hold that need no attention: ASCII
// other than the quote, the backslash and control characters.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// key reads an object key: common ones without allocating.
func (p *parser) key() (string, error) {
	if p.peek() != '"' {
		return "", errSyntax
	}
	end := p.pos + 1
	for end < len(p.data) && plain[p.data[end]] {
		end++
	}
	if end < len(p.data) && p.data[end] == '"' {
		k := key(p.data[p.pos+1 : end])
		p.pos = end + 1
		return k, nil
	}
	return p.str()
}

// str reads a string starting at its opening quote.
func (p *parser) str() (string, error) {
	if p.peek() != '"' {
		return "", errSyntax
	}
	p.pos++
	start := p.pos
	ascii := true
	d := p.data
	for i := p.pos; i < len(d); i++ {
		if plain[d[i]] {
			continue
		}
		switch c := d[i]; {
		case c == '"':
			s := d[start:i]
			p.pos = i + 1
			if ascii || utf8.Valid(s) {
				return string(s), nil
			}
			return unquoteSlow(s), nil
		case c == '\\':
			p.pos = i
			return p.strEscaped(start)
		case c < 0x20:
			return "", errSyntax
		default:
			ascii = false
		}
	}
	return "", errSyntax
}

// strValue reads a string value, reusing the interface of a recent equal
// short one.
func (p *parser) strValue() (any, error) {
	d := p.data
	end := p.pos + 1
	for end < len(d) && plain[d[end]] {
		end++
	}
	if end < len(d) && d[end] == '"' && end-p.pos-1 <= 32 {
		b := d[p.pos+1 : end]
		h := 0
		if len(b) > 0 {
			h = (len(b)*31 + int(b[0])*7 + int(b[len(b)-1])) & (len(p.recent) - 1)
		}
		e := &p.recent[h]
		p.pos = end + 1
		if e.v != nil && e.s == string(b) {
			return e.v, nil
		}
		s := string(b)
		e.s, e.v = s, s
		return e.v, nil
	}
	s, err := p.str()
	if err != nil {
		return nil, err
	}
	return s, nil
}

// scanString passes over a string starting at its opening quote, checking
// it as str does without building it.
func (p *parser) scanString() error {
	if p.peek() != '"' {
		return errSyntax
	}
	d := p.data
	for i := p.pos + 1; i < len(d); i++ {
		if plain[d[i]] {
			continue
		}
		switch c := d[i]; {
		case c == '"':
			p.pos = i + 1
			return nil
		case c == '\\':
			n := escapeLen(d[i:])
			if n == 0 {
				return errSyntax
			}
			i += n - 1
		case c < 0x20:
			return errSyntax
		}
	}
	return errSyntax
}

// escapeLen returns the length of the valid escape at the start of s, or
// 0 if there is none.
func escapeLen(s []byte) int {
	if len(s) < 2 {
		return 0
	}
	switch s[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if getu4(s) >= 0 {
			return 6
		}
	}
	return 0
}

// strEscaped finishes a string that has escapes; pos is at the first.
func (p *parser) strEscaped(start int) (string, error) {
	d := p.data
	for i := p.pos; i < len(d); {
		switch c := d[i]; {
		case c == '\\':
			n := escapeLen(d[i:])
			if n == 0 {
				return "", errSyntax
			}
			i += n
			continue
		case c == '"':
			p.pos = i + 1
			return unquoteSlow(d[start:i]), nil
		case c < 0x20:
			return "", errSyntax
		}
		i++
	}
	return "", errSyntax
}

// unquoteSlow decodes the body of a valid JSON string as encoding/json
// does.
func unquoteSlow(s []byte) string {
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
				rr := getu4(s[r-1:])
				r += 5
				if utf16.IsSurrogate(rr) {
					if r+6 <= len(s) && s[r] == '\\' && s[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, getu4(s[r:])); dec != unicode.ReplacementChar {
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

// getu4 decodes a \u escape with its four hex digits at the start of s;
// it returns -1 when s does not start with one.
func getu4(s []byte) rune {
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
