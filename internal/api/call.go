package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgtext"
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
	errs, err := pgtext.JSONErrors(b)
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
func (c *call) audit(e auditlog.Entry) { c.auditAll([]auditlog.Entry{e}) }

// auditAll records the entries of one call (an apply's changed objects)
// in one write, as audit does one.
func (c *call) auditAll(es []auditlog.Entry) {
	if len(es) == 0 {
		return
	}
	for i := range es {
		es[i].Actor = auditlog.ActorOf(c.principal.TokenID, string(c.principal.Role))
		es[i].ActorName = c.principal.Name
		es[i].TokenID = c.principal.TokenID
		if es[i].Tenant == "" {
			es[i].Tenant = c.tenant.Name
		}
	}
	if err := c.s.Audit.RecordAll(context.WithoutCancel(c.ctx()), c.tenant.ID, es); err != nil {
		e := es[0]
		c.s.Logger.Error("admin audit log write failed; the change was made", "error", err,
			"actor", e.Actor, "action", e.Action, "kind", e.Kind, "name", e.Name, "tenant", e.Tenant, "entries", len(es))
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
