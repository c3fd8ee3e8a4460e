package admission

import (
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// parseObject decodes one JSON object into the form the evaluator reads,
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
func parseObject(data []byte) (map[string]any, error) {
	p := parser{data: data}
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

type parser struct {
	data []byte
	pos  int
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

func (p *parser) value() (any, error) {
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

func (p *parser) object() (map[string]any, error) {
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

func (p *parser) array() ([]any, error) {
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

func (p *parser) number() (any, error) {
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
func (p *parser) key() (string, error) {
	if p.pos < len(p.data) && p.data[p.pos] == '"' {
		end := p.pos + 1
		for end < len(p.data) && p.data[end] != '"' && p.data[end] != '\\' && p.data[end] < utf8.RuneSelf {
			end++
		}
		if end < len(p.data) && p.data[end] == '"' {
			k := key(p.data[p.pos+1 : end])
			p.pos = end + 1
			return k, nil
		}
	}
	return p.str()
}

// str reads a string starting at its opening quote.
func (p *parser) str() (string, error) {
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
			return unquoteSlow(s), nil
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
func (p *parser) strEscaped(start int) (string, error) {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case '\\':
			p.pos += 2
			continue
		case '"':
			s := p.data[start:p.pos]
			p.pos++
			return unquoteSlow(s), nil
		}
		p.pos++
	}
	return "", fmt.Errorf("unexpected end of JSON input")
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
