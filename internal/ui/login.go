package ui

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/uisession"
)

func (s *Server) loginPage(r *request) error {
	if r.sess != nil {
		http.Redirect(r.w, r.r, "/ui/", http.StatusSeeOther)
		return nil
	}
	return s.renderLogin(r, http.StatusOK, nil)
}

// renderLogin shows the sign-in form with a fresh CSRF token in its
// double-submit cookie.
func (s *Server) renderLogin(r *request, code int, e *fault.Error) error {
	token := randomString()
	setCookie(r.w, loginCSRFCookie, token, time.Hour)
	v := r.view("Sign in", "", nil)
	v.CSRF, v.Error = token, e
	return s.pages.render(r.w, code, "login", "layout", v)
}

func (s *Server) login(r *request) error {
	token := strings.TrimSpace(r.r.PostFormValue("token"))
	keys := []string{addrKey(clientAddr(r.r)), tokenKey(token)}
	// The token is checked before the throttle is asked: a valid token
	// always signs in, whoever else failed from the same address.
	var who whoAmI
	var err error
	if token != "" {
		err = s.call(uisession.WithSignIn(r.r.Context()), token, "GET", p("whoami"), nil, nil, &who)
	}
	if fault.ErrorCode(err) == fault.Unauthenticated || token == "" {
		s.throttle.fail(keys...)
		if wait := s.throttle.wait(keys...); wait > 0 {
			secs := int(math.Ceil(wait.Seconds()))
			r.w.Header().Set("Retry-After", fmt.Sprint(secs))
			return s.renderLogin(r, http.StatusTooManyRequests, &fault.Error{Code: fault.TooManyRequests,
				Message: fmt.Sprintf("Sign-in failed, and too many sign-ins failed from your address or with this token. Wait %d seconds, then try again.", secs)})
		}
		return s.renderLogin(r, http.StatusUnauthorized, &fault.Error{Code: fault.Unauthenticated,
			Message: "Sign-in failed: that token is not valid. It may be mistyped, expired or revoked."})
	}
	if err != nil {
		return err
	}
	// Only the token's key: an address's failures stay counted whatever
	// one of its clients holds.
	s.throttle.succeed(keys[1])
	sess, err := s.sessions.create(r.r.Context(), who)
	if errors.Is(err, uisession.ErrNotFound) {
		// Revoked or expired since whoami answered.
		return s.renderLogin(r, http.StatusUnauthorized, &fault.Error{Code: fault.Unauthenticated,
			Message: "Sign-in failed: that token is not valid. It may be mistyped, expired or revoked."})
	}
	if err != nil {
		s.Logger.Error("UI session not created", "error", err)
		return &fault.Error{Code: fault.Unavailable, Message: "the session cannot be stored: the database is unavailable; try again shortly"}
	}
	setCookie(r.w, sessionCookie, sess.id, sess.expires.Sub(s.Now()))
	setCookie(r.w, loginCSRFCookie, "", 0)
	http.Redirect(r.w, r.r, "/ui/", http.StatusSeeOther)
	return nil
}

func (s *Server) logout(r *request) error {
	if err := s.sessions.delete(r.r.Context(), r.sess); err != nil {
		return err
	}
	setCookie(r.w, sessionCookie, "", 0)
	r.sess = nil
	return s.renderLogin(r, http.StatusOK, nil)
}

func (s *Server) home(r *request) error {
	if r.sess.who.Operator() {
		http.Redirect(r.w, r.r, "/ui/tenants", http.StatusSeeOther)
	} else {
		http.Redirect(r.w, r.r, "/ui/t/"+url.PathEscape(r.sess.who.Tenant)+"/clusters", http.StatusSeeOther)
	}
	return nil
}

// pickTenant serves a navigation entry without a tenant: a tenant's user
// goes to their tenant's page, an operator chooses the tenant.
func (s *Server) pickTenant(page, title string) func(*request) error {
	return func(r *request) error {
		if !r.sess.who.Operator() {
			http.Redirect(r.w, r.r, "/ui/t/"+url.PathEscape(r.sess.who.Tenant)+"/"+page, http.StatusSeeOther)
			return nil
		}
		var ts list[tenant]
		if err := r.api("GET", p("tenants"), nil, nil, &ts); err != nil {
			return err
		}
		return r.page("pick", r.view(title, page, map[string]any{"Tenants": ts.Items, "Page": page}))
	}
}
