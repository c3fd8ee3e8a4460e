package api

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"time"
)

// openAPI serves the OpenAPI 3.1 document, built from the route table.
func (s *Server) openAPI(c *call) error {
	return c.json(s.openAPIDocument())
}

var pathParam = regexp.MustCompile(`\{([a-zA-Z]+)\}`)

// openAPIDocument describes every route: its parameters, body, answer,
// who may call it and the Status it answers with on error.
func (s *Server) openAPIDocument() map[string]any {
	schemas := map[string]any{
		"Status": map[string]any{"type": "object", "description": "A Kubernetes Status; details.causes name bad fields.",
			"properties": map[string]any{
				"kind": str(), "apiVersion": str(), "status": str(), "message": str(), "reason": str(),
				"code":    map[string]any{"type": "integer"},
				"details": map[string]any{"type": "object"},
			}},
	}
	gen := schemaGen{schemas: schemas}
	paths := map[string]any{}
	for _, rt := range s.routes() {
		op := map[string]any{
			"summary":     rt.summary,
			"operationId": operationID(rt),
			"x-access":    accessNames[rt.access],
		}
		if rt.access != public {
			op["security"] = []any{map[string]any{"bearer": []any{}}}
		}
		var params []any
		for _, m := range pathParam.FindAllStringSubmatch(rt.path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": str()})
		}
		for _, q := range rt.query {
			params = append(params, map[string]any{"name": q.name, "in": "query", "description": q.description, "schema": str()})
		}
		if params != nil {
			op["parameters"] = params
		}
		switch {
		case rt.rawBody != "":
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{
				"application/yaml": map[string]any{"schema": map[string]any{"type": "string", "description": rt.rawBody}},
				"application/json": map[string]any{"schema": map[string]any{"description": rt.rawBody}},
			}}
		case rt.request != nil:
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{
				"application/json": map[string]any{"schema": gen.schema(reflect.TypeOf(rt.request))}}}
		}
		code := rt.status
		if code == 0 {
			code = http.StatusOK
		}
		ok := map[string]any{"description": http.StatusText(code)}
		if rt.response != nil {
			ok["content"] = map[string]any{"application/json": map[string]any{"schema": gen.schema(reflect.TypeOf(rt.response))}}
		}
		statusRef := map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Status"}}}
		op["responses"] = map[string]any{
			itoa(code): ok,
			"default":  map[string]any{"description": "an error, as a Kubernetes Status", "content": statusRef},
		}
		item, _ := paths[rt.path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[rt.path] = item
		}
		item[strings.ToLower(rt.method)] = op
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "Portcullis admin API", "version": "v1",
			"description": "Tenants, clusters, credentials, policies and decisions of a Portcullis gateway. " +
				"Authenticate with an admin token: Authorization: Bearer pcadm_..."},
		"paths": paths,
		"components": map[string]any{
			"schemas":         schemas,
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
		},
	}
}

var accessNames = map[access]string{
	public: "public", authenticated: "any token", operatorOnly: "operator",
	tenantViewer: "operator, or a viewer or admin token of the tenant", tenantAdmin: "operator, or an admin token of the tenant",
	clusterSync: "operator, an admin token of the tenant, or the sync token of the cluster",
}

func operationID(rt route) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(rt.method))
	for _, part := range strings.Split(strings.TrimPrefix(rt.path, "/api/v1/"), "/") {
		part = strings.Trim(part, "{}")
		part = strings.NewReplacer(".", "", "-", "").Replace(part)
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

func str() map[string]any { return map[string]any{"type": "string"} }

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// schemaGen derives JSON Schemas from the wire types' Go definitions, so
// the document cannot drift from what is sent.
type schemaGen struct{ schemas map[string]any }

var (
	timeType = reflect.TypeOf(time.Time{})
	rawType  = reflect.TypeOf(json.RawMessage{})
)

func (g schemaGen) schema(t reflect.Type) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == rawType:
		return map[string]any{"description": "any JSON value"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.schema(t.Elem())
	case reflect.String:
		return str()
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.Struct:
		name := schemaName(t)
		if _, done := g.schemas[name]; !done {
			g.schemas[name] = map[string]any{} // breaks cycles
			props := map[string]any{}
			var required []string
			for i := range t.NumField() {
				f := t.Field(i)
				if !f.IsExported() {
					continue
				}
				tag := f.Tag.Get("json")
				if tag == "-" {
					continue
				}
				fname, opts, _ := strings.Cut(tag, ",")
				if fname == "" {
					fname = f.Name
				}
				props[fname] = g.schema(f.Type)
				if !strings.Contains(opts, "omitempty") && f.Type.Kind() != reflect.Pointer {
					required = append(required, fname)
				}
			}
			sch := map[string]any{"type": "object", "properties": props}
			if required != nil {
				sch["required"] = required
			}
			g.schemas[name] = sch
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{}
}

var nonName = regexp.MustCompile(`[^A-Za-z0-9]+`)

// schemaName turns "List[github.com/.../apiv1.Tenant]" into "ListTenant".
func schemaName(t reflect.Type) string {
	name := t.Name()
	if i := strings.IndexByte(name, '['); i >= 0 {
		inner := name[i+1 : len(name)-1]
		inner = inner[strings.LastIndexByte(inner, '.')+1:]
		name = name[:i] + inner
	}
	return nonName.ReplaceAllString(name, "")
}
