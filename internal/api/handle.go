package api

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"unicode/utf8"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
	"github.com/portcullis-dev/portcullis/internal/uisession"
)

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
	var p adminauth.Principal
	var err error
	if id, ok := uisession.Token(c.ctx()); ok {
		// An in-process call of the web UI for a session it found: the
		// session names its token, which is checked here as a bearer
		// token is, so a revoked token stops the UI on every replica.
		p, err = s.Tokens.AuthenticateID(c.ctx(), id)
	} else {
		token, ok := strings.CutPrefix(c.r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			return fault.Errorf(fault.Unauthenticated, "an admin token is required: Authorization: Bearer <token>")
		}
		p, err = s.authenticateBearer(c, strings.TrimSpace(token))
	}
	if errors.Is(err, adminauth.ErrUnauthenticated) {
		return &fault.Error{Code: fault.Unauthenticated, Message: err.Error()}
	}
	var fe *fault.Error
	if errors.As(err, &fe) { // over the unknown-token limit
		return fe
	}
	if err != nil {
		return fault.Wrap(err, fault.Unavailable, "the token store is unavailable; retry shortly")
	}
	c.principal = p
	// A sync token runs inside a tenant's cluster: it reaches its
	// cluster's inventory pushes and nothing else.
	if p.Role == adminauth.RoleSync && c.rt.access != clusterSync {
		return fault.Errorf(fault.Forbidden, "%q is a sync token of cluster %q: it may only push that cluster's inventory", p.Name, p.ClusterName)
	}
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
	if p.Role == adminauth.RoleSync {
		// Another cluster of the tenant looks like one that does not exist.
		if cluster := c.r.PathValue("cluster"); cluster != p.ClusterName {
			return clusterNotFound(name, cluster)
		}
		return nil
	}
	if (c.rt.access == tenantAdmin || c.rt.access == clusterSync) && !p.Operator() && p.Role != adminauth.RoleAdmin {
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
	if fault.ErrorCode(err) == fault.NotFound {
		return t, tenantNotFound(name)
	}
	return t, err
}

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
