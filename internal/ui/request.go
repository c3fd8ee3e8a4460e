package ui

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/uisession"
)

// request is one page request.
type request struct {
	s    *Server
	w    http.ResponseWriter
	r    *http.Request
	sess *session
}

// view is what every page template gets.
type view struct {
	// Title is the page's one <h1> and its <title>.
	Title string
	// Nav is the navigation entry of the page.
	Nav    string
	Who    whoAmI
	Signed bool
	CSRF   string
	// Tenant is the tenant the page is about, for the navigation links.
	Tenant string
	Flash  string
	Error  *fault.Error
	Data   any
}

func (r *request) tenant() string { return r.r.PathValue("tenant") }

// api calls the admin API as the session's token.
func (r *request) api(method, path string, q url.Values, body, out any) error {
	return r.s.call(uisession.WithToken(r.r.Context(), r.sess.tokenID), "", method, path, q, body, out)
}

func (r *request) htmx() bool { return r.r.Header.Get("HX-Request") == "true" }

func (r *request) view(title, nav string, data any) *view {
	v := &view{Title: title, Nav: nav, Data: data, Tenant: r.tenant()}
	if r.sess != nil {
		v.Signed, v.Who, v.CSRF = true, r.sess.who, r.sess.csrf
		if v.Tenant == "" {
			v.Tenant = r.sess.who.Tenant
		}
		var err error
		if v.Flash, err = r.s.sessions.takeFlash(r.r.Context(), r.sess); err != nil {
			// Shown again on the next page, at worst.
			r.s.Logger.Warn("UI session message not cleared", "error", err)
		}
	}
	return v
}

// page renders a whole page with status 200.
func (r *request) page(name string, v *view) error {
	return r.s.pages.render(r.w, http.StatusOK, name, "layout", v)
}

// fragment renders one template of a page, for an htmx swap.
func (r *request) fragment(page, name string, v *view) error {
	return r.s.pages.render(r.w, http.StatusOK, page, name, v)
}

// redirect answers a POST with 303 to a page, carrying a one-time message.
func (r *request) redirect(to, flash string) error {
	if flash != "" && r.sess != nil {
		if err := r.s.sessions.setFlash(r.r.Context(), r.sess, flash); err != nil {
			return err
		}
	}
	if r.htmx() {
		r.w.Header().Set("HX-Location", to)
		r.w.WriteHeader(http.StatusNoContent)
		return nil
	}
	http.Redirect(r.w, r.r, to, http.StatusSeeOther)
	return nil
}

func notFound(format string, args ...any) error {
	return fault.Errorf(fault.NotFound, format, args...)
}

func forbidden(msg string) error {
	return &fault.Error{Code: fault.Forbidden, Message: msg}
}

func badRequest(format string, args ...any) error {
	return fault.Errorf(fault.BadRequest, format, args...)
}

// fail renders an error: a *fault.Error (the API's, as the client read
// it, or the UI's own) with its message and the status of its code;
// anything else as a 500 that is logged. A token the API no longer
// accepts (revoked or expired) ends the session.
func (r *request) fail(err error) {
	var e *fault.Error
	if !errors.As(err, &e) {
		r.s.Logger.Error("UI error", "method", r.r.Method, "path", r.r.URL.Path, "error", err)
		e = &fault.Error{Code: fault.Internal, Message: "something went wrong on the server; it has been logged"}
	}
	code := e.Code.HTTPStatus()
	if e.Code == fault.Unauthenticated && r.sess != nil {
		if err := r.s.sessions.delete(r.r.Context(), r.sess); err != nil {
			// The token no longer works, so neither does the session.
			r.s.Logger.Warn("UI session not deleted", "error", err)
		}
		setCookie(r.w, sessionCookie, "", 0)
		r.redirect("/ui/login", "")
		return
	}
	title := http.StatusText(code)
	if title == "" {
		title = "Error"
	}
	v := r.view(title, "", nil)
	v.Error = e
	if r.htmx() {
		// htmx does not swap error answers by default; the error fragment
		// is sent with 200 and says what went wrong in place.
		_ = r.s.pages.render(r.w, http.StatusOK, "error", "message", v)
		return
	}
	_ = r.s.pages.render(r.w, code, "error", "layout", v)
}
