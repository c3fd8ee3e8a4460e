package admission

import (
	"encoding/json"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// unmarshalWire fills a wire from body in one pass over the bytes, checking
// the syntax as it goes and building the objects straight into the
// evaluator's form. It keeps the general decoder's semantics
// (unmarshalReference): field names are case-sensitive, unknown fields are
// ignored, null leaves a field at its zero value, a repeated field is
// decoded again into the same place (so repeated structs merge, as
// encoding/json does), and a value of the wrong type is refused. Invalid
// JSON anywhere in body gets the general decoder's syntax error, as before
// any other error. A differential fuzz test holds the two together.
func unmarshalWire(body []byte) (*wire, error) {
	w, err := parseWire(body)
	switch {
	case err == errSyntax:
		return unmarshalReference(body) // for its wording of the syntax error
	case err != nil:
		// The parser stopped at the first problem; a syntax error further
		// on still comes first.
		if !json.Valid(body) {
			return unmarshalReference(body)
		}
		return nil, err
	}
	return w, nil
}

func parseWire(body []byte) (*wire, error) {
	p := &parser{data: body}
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
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, errSyntax
	}
	return w, nil
}

func typeError(field, want string) error {
	return badRequest("the body is not a valid AdmissionReview: %s must be %s", field, want)
}

// fields walks the object at p, calling fn with p at each value; fn must
// consume the value.
func (p *parser) fields(name string, fn func(key string) error) error {
	p.skipSpace()
	if p.peek() != '{' {
		return typeError(name, "a JSON object")
	}
	if err := p.open(); err != nil {
		return err
	}
	p.skipSpace()
	if p.peek() == '}' {
		p.pos++
		p.depth--
		return nil
	}
	for {
		key, err := p.key()
		if err != nil {
			return err
		}
		p.skipSpace()
		if p.peek() != ':' {
			return errSyntax
		}
		p.pos++
		p.skipSpace()
		if err := fn(key); err != nil {
			return err
		}
		if done, err := p.next('}'); err != nil {
			return err
		} else if done {
			return nil
		}
	}
}

// null consumes a JSON null if one is next.
func (p *parser) null() bool {
	return p.peek() == 'n' && p.literal("null")
}

// skip passes over one value without building it, as the general decoder
// does for fields it does not know, checking only its syntax.
func (p *parser) skip() error {
	switch p.peek() {
	case '"':
		return p.scanString()
	case '{':
		if err := p.open(); err != nil {
			return err
		}
		p.skipSpace()
		if p.peek() == '}' {
			p.pos++
			p.depth--
			return nil
		}
		for {
			if err := p.scanString(); err != nil {
				return err
			}
			p.skipSpace()
			if p.peek() != ':' {
				return errSyntax
			}
			p.pos++
			p.skipSpace()
			if err := p.skip(); err != nil {
				return err
			}
			if done, err := p.next('}'); err != nil {
				return err
			} else if done {
				return nil
			}
		}
	case '[':
		if err := p.open(); err != nil {
			return err
		}
		p.skipSpace()
		if p.peek() == ']' {
			p.pos++
			p.depth--
			return nil
		}
		for {
			if err := p.skip(); err != nil {
				return err
			}
			if done, err := p.next(']'); err != nil {
				return err
			} else if done {
				return nil
			}
		}
	case 't':
		if p.literal("true") {
			return nil
		}
	case 'f':
		if p.literal("false") {
			return nil
		}
	case 'n':
		if p.literal("null") {
			return nil
		}
	default:
		_, _, _, _, err := p.scanNumber()
		return err
	}
	return errSyntax
}

func (p *parser) stringInto(dst *string, field string) error {
	if p.null() {
		return nil
	}
	if p.peek() != '"' {
		return typeError(field, "a string")
	}
	s, err := p.str()
	*dst = s
	return err
}

func (p *parser) request(r *wireRequest) error {
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
			m, bad, valErr, err := p.objectValue()
			r.object, r.objectBad, r.objectErr = m, bad, valErr
			return err
		case "oldObject":
			m, bad, valErr, err := p.objectValue()
			r.oldObject, r.oldObjBad, r.oldObjErr = m, bad, valErr
			return err
		case "dryRun":
			switch {
			case p.null():
				r.DryRun = nil
			case p.literal("true"):
				v := true
				r.DryRun = &v
			case p.literal("false"):
				v := false
				r.DryRun = &v
			default:
				return typeError("request.dryRun", "a boolean")
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
// null; bad is set for any other JSON value. An object whose content the
// evaluator cannot hold (a number out of range) gives valErr, not err: the
// general decoder only decodes the last of repeated fields, so the error
// counts only if no later value replaces it.
func (p *parser) objectValue() (m map[string]any, bad bool, valErr, err error) {
	if p.null() {
		return nil, false, nil, nil
	}
	if p.peek() != '{' {
		return nil, true, nil, p.skip()
	}
	start, depth := p.pos, p.depth
	m, err = p.object()
	switch {
	case err == errSyntax:
		return nil, false, nil, err
	case err != nil:
		// Back to the start, nesting included, and skip it again.
		p.pos, p.depth = start, depth
		return nil, false, err, p.skip()
	}
	return m, false, nil, nil
}

func (p *parser) gvk(dst *metav1.GroupVersionKind, field string) error {
	return p.stringFields(field, [3]string{"group", "version", "kind"}, [3]*string{&dst.Group, &dst.Version, &dst.Kind})
}

func (p *parser) gvr(dst *metav1.GroupVersionResource, field string) error {
	return p.stringFields(field, [3]string{"group", "version", "resource"}, [3]*string{&dst.Group, &dst.Version, &dst.Resource})
}

// stringFields reads an object whose fields of interest are all strings
// (a GroupVersionKind or GroupVersionResource), or null. Field paths for
// errors are built only on an error, off the common path.
func (p *parser) stringFields(field string, names [3]string, dst [3]*string) error {
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
			if p.peek() != '"' {
				return typeError(field+"."+n, "a string")
			}
			s, err := p.str()
			*dst[i] = s
			return err
		}
		return p.skip()
	})
}

func (p *parser) userInfo(u *authenticationv1.UserInfo) error {
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

func (p *parser) stringList(field string) ([]string, error) {
	if p.peek() != '[' {
		return nil, typeError(field, "a list of strings")
	}
	if err := p.open(); err != nil {
		return nil, err
	}
	out := []string{}
	p.skipSpace()
	if p.peek() == ']' {
		p.pos++
		p.depth--
		return out, nil
	}
	for {
		switch {
		case p.null(): // null element: the zero value
			out = append(out, "")
		case p.peek() == '"':
			s, err := p.str()
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		default:
			return nil, typeError(field, "a list of strings")
		}
		if done, err := p.next(']'); err != nil {
			return nil, err
		} else if done {
			return out, nil
		}
	}
}
