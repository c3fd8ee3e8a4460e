package decisions

import (
	"strconv"
)

// The JSON columns are written by hand: encoding/json's reflection was
// most of the CPU a decision row costs, on every webhook request. The
// strings are already clean (valid UTF-8, no NUL), and PostgreSQL parses
// the text into jsonb, so only the content has to match encoding/json's,
// not its bytes (TestRowJSONMatchesEncodingJSON).

// annotationsJSON is the audit annotations as one JSON object. A repeated
// key is written again: jsonb keeps its last value, as a map would.
func annotationsJSON(anns []AuditAnnotation) []byte {
	return appendAnnotationsJSON(make([]byte, 0, 64), anns)
}

func appendAnnotationsJSON(b []byte, anns []AuditAnnotation) []byte {
	b = append(b, '{')
	for i, a := range anns {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, clean(a.Key))
		b = append(b, ':')
		b = appendJSONString(b, clean(a.Value))
	}
	return append(b, '}')
}

// bindingsJSON is []BindingRecord as encoding/json would write it.
func bindingsJSON(bs []BindingRecord) []byte {
	return appendBindingsJSON(make([]byte, 0, 128*len(bs)+2), bs)
}

func appendBindingsJSON(b []byte, bs []BindingRecord) []byte {
	b = append(b, '[')
	for i, r := range bs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"policy":`...)
		b = appendJSONString(b, r.Policy)
		b = append(b, `,"binding":`...)
		b = appendJSONString(b, r.Binding)
		b = append(b, `,"param":`...)
		b = appendJSONString(b, r.Param)
		b = append(b, `,"outcome":`...)
		b = appendJSONString(b, r.Outcome)
		b = append(b, `,"denied":`...)
		b = strconv.AppendBool(b, r.Denied)
		b = append(b, `,"failurePolicyApplied":`...)
		b = strconv.AppendBool(b, r.FailurePolicyApplied)
		b = append(b, `,"timeout":`...)
		b = strconv.AppendBool(b, r.Timeout)
		b = append(b, `,"error":`...)
		b = appendJSONString(b, r.Error)
		b = append(b, `,"messages":[`...) // never nil: cleanAll
		for j, m := range r.Messages {
			if j > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, m)
		}
		b = append(b, ']')
		if r.Mutated {
			b = append(b, `,"mutated":true`...)
		}
		if r.Reinvoked {
			b = append(b, `,"reinvoked":true`...)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s, valid UTF-8, as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
