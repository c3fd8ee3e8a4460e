package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/policystore"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

// call is one request to a route, once authenticated and authorized.
type call struct {
	s         *Server
	w         http.ResponseWriter
	r         *http.Request
	rt        route
	principal adminauth.Principal
	// tenant is the {tenant} of the path, resolved; zero on other routes.
	tenant tenancy.Tenant
}

func (c *call) ctx() context.Context { return c.r.Context() }

// json writes v with the route's success status.
func (c *call) json(v any) error {
	code := c.rt.status
	if code == 0 {
		code = http.StatusOK
	}
	writeJSON(c.w, code, v)
	return nil
}

// noContent answers 204.
func (c *call) noContent() error {
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}

func (c *call) maxBody() int64 {
	if c.s.MaxBodyBytes > 0 {
		return c.s.MaxBodyBytes
	}
	return 8 << 20
}

// body reads the whole request body, refusing one over the limit.
func (c *call) body() ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(c.w, c.r.Body, c.maxBody()))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, fault.Errorf(fault.TooLarge, "request body is larger than %d bytes", tooLarge.Limit)
	}
	if err != nil {
		return nil, fault.Errorf(fault.BadRequest, "reading the request body: %v", err)
	}
	return b, nil
}

// decode reads a JSON body into v, strictly: an unknown field is an error
// that names it, so a misspelt option is never silently ignored.
func (c *call) decode(v any) error {
	b, err := c.body()
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return fault.Errorf(fault.BadRequest, "a JSON request body is required")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fault.Errorf(fault.BadRequest, "invalid JSON body: %v", err)
	}
	if dec.More() {
		return fault.Errorf(fault.BadRequest, "invalid JSON body: more than one JSON value")
	}
	errs, err := policystore.JSONTextErrors(b)
	if err != nil {
		return fault.Errorf(fault.BadRequest, "invalid JSON body: %v", err)
	}
	if len(errs) > 0 {
		return fault.InvalidField(errs[0].Field, "%s", errs[0].Detail)
	}
	return nil
}

func (c *call) query(name string) string { return c.r.URL.Query().Get(name) }

// queryBool reads a boolean query parameter; absent is false.
func (c *call) queryBool(name string) (bool, error) {
	v := c.query(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fault.InvalidField(name, "must be true or false, not %q", v)
	}
	return b, nil
}

// queryInt reads an integer query parameter; absent is def.
func (c *call) queryInt(name string, def int64) (int64, error) {
	v := c.query(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fault.InvalidField(name, "must be an integer, not %q", v)
	}
	return n, nil
}

// audit records a mutating call. The change has already happened, so a
// failure to record it is logged at error level rather than returned: the
// caller must learn that their change was made.
func (c *call) audit(e auditlog.Entry) {
	e.Actor = c.principal.Name
	e.TokenID = c.principal.TokenID
	if e.Tenant == "" {
		e.Tenant = c.tenant.Name
	}
	if err := c.s.Audit.Record(context.WithoutCancel(c.ctx()), c.tenant.ID, e); err != nil {
		c.s.Logger.Error("admin audit log write failed; the change was made", "error", err,
			"actor", e.Actor, "action", e.Action, "kind", e.Kind, "name", e.Name, "tenant", e.Tenant)
	}
}

// handle authenticates, authorizes, resolves {tenant} and runs rt.
func (s *Server) handle(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := &call{s: s, w: w, r: r, rt: rt}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.Logger.Error("panic in admin API handler", "panic", fmt.Sprint(p), "stack", string(debug.Stack()),
					"method", r.Method, "path", r.URL.Path)
				s.writeError(w, r, errors.New("panic"))
			}
		}()
		if err := checkText(c); err != nil {
			s.writeError(w, r, err)
			return
		}
		if err := s.authorize(c); err != nil {
			s.writeError(w, r, err)
			return
		}
		if err := rt.handle(c); err != nil {
			s.writeError(w, r, err)
		}
	})
}

func (s *Server) authorize(c *call) error {
	if c.rt.access == public {
		return nil
	}
	token, ok := strings.CutPrefix(c.r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return fault.Errorf(fault.Unauthenticated, "an admin token is required: Authorization: Bearer <token>")
	}
	p, err := s.Tokens.Authenticate(c.ctx(), strings.TrimSpace(token))
	if errors.Is(err, adminauth.ErrUnauthenticated) {
		return &fault.Error{Code: fault.Unauthenticated, Message: err.Error()}
	}
	if err != nil {
		return fault.Wrap(err, fault.Unavailable, "the token store is unavailable; retry shortly")
	}
	c.principal = p
	switch c.rt.access {
	case authenticated:
		return nil
	case operatorOnly:
		if !p.Operator() {
			return fault.Errorf(fault.Forbidden, "this call needs an operator token; %q is a %s token of tenant %q", p.Name, p.Role, p.TenantName)
		}
		if c.r.PathValue("tenant") == "" {
			return nil
		}
	}
	// A route whose path has {tenant} gets it resolved.
	name := c.r.PathValue("tenant")
	t, err := s.resolveTenant(c, name)
	if err != nil {
		return err
	}
	c.tenant = t
	if c.rt.access == tenantAdmin && !p.Operator() && p.Role != adminauth.RoleAdmin {
		return fault.Errorf(fault.Forbidden, "this call changes tenant %q and needs an admin token; %q is a %s token", name, p.Name, p.Role)
	}
	return nil
}

// resolveTenant finds a tenant named by a call. A token of another tenant
// learns nothing, not even that the tenant exists.
func (s *Server) resolveTenant(c *call, name string) (tenancy.Tenant, error) {
	p := c.principal
	if !p.Operator() && name != p.TenantName {
		return tenancy.Tenant{}, tenantNotFound(name)
	}
	t, err := s.Tenancy.FindTenantByName(c.ctx(), name)
	if tenancy.ErrorCode(err) == tenancy.CodeNotFound {
		return t, tenantNotFound(name)
	}
	return t, err
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// limit is the ?limit= of a listing, between 1 and apiv1.MaxLimit.
func (c *call) limit() (int64, error) {
	limit, err := c.queryInt(apiv1.QueryLimit, apiv1.DefaultLimit)
	if err != nil {
		return 0, err
	}
	if limit < 1 || limit > apiv1.MaxLimit {
		return 0, fault.InvalidField(apiv1.QueryLimit, "must be between 1 and %d", apiv1.MaxLimit)
	}
	return limit, nil
}

// page cuts one page out of items, which are sorted by key (ascending and
// unique): the page starts after the cursor. Keys are opaque to clients.
func page[T any](c *call, items []T, key func(T) string) (apiv1.List[T], error) {
	limit, err := c.limit()
	if err != nil {
		return apiv1.List[T]{}, err
	}
	start := 0
	if cur := c.query(apiv1.QueryContinue); cur != "" {
		after, err := decodeCursor(cur)
		if err != nil {
			return apiv1.List[T]{}, err
		}
		for start < len(items) && key(items[start]) <= after {
			start++
		}
	}
	end := min(start+int(limit), len(items))
	out := apiv1.List[T]{Items: items[start:end]}
	if out.Items == nil {
		out.Items = []T{}
	}
	if end < len(items) {
		out.Continue = encodeCursor(key(items[end-1]))
	}
	return out, nil
}

// sortKey makes ids sort as strings in numeric order, for page.
func sortKey(id int64) string { return fmt.Sprintf("%020d", id) }

// checkText refuses path segments and query parameters that are not valid
// UTF-8 or hold a NUL: PostgreSQL cannot compare text with them, so they
// would otherwise fail as internal errors. No name can contain them, so a
// path segment is answered as not found.
func checkText(c *call) error {
	ok := func(s string) bool { return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 }
	for _, m := range pathParam.FindAllStringSubmatch(c.rt.path, -1) {
		if v := c.r.PathValue(m[1]); !ok(v) {
			return fault.Errorf(fault.NotFound, "no %s named %q", m[1], v)
		}
	}
	for name, vs := range c.r.URL.Query() {
		for _, v := range vs {
			if !ok(name) || !ok(v) {
				return fault.InvalidField(strings.ToValidUTF8(name, "\ufffd"), "must be valid UTF-8 without NUL characters")
			}
		}
	}
	return nil
}
