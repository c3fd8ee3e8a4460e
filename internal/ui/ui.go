// Package ui serves the admin web UI under /ui/ on the admin listener.
//
// Pages are rendered on the server with html/template (web/templates) and
// use htmx for partial updates. The UI has no authorization of its own: each
// page calls the admin API's handler in-process with the signed-in user's
// token (client.go), so that the API's rules decide what a user may see and
// change, and the UI cannot drift from them. A sign-in becomes a session
// in the database that every replica shares (session.go): the browser
// holds only a random session id in an HttpOnly, Secure, SameSite=Strict
// cookie, and the session names the admin token, whose secret is kept
// nowhere; each API call acts as that token (uisession.WithToken), which
// the API checks every time.
package ui

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/portcullis-dev/portcullis/internal/authmiss"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/uisession"
)

// Server is the UI. API, Logger and Sessions are required.
type Server struct {
	// API is the admin API's handler (api.Server.Handler()).
	API    http.Handler
	Logger *slog.Logger
	// Sessions stores the sessions, shared by every replica
	// (adminauth.Store).
	Sessions uisession.Store
	// SessionTTL is how long a session lives after sign-in; 8h when zero.
	// A session never outlives its token.
	SessionTTL time.Duration
	// SessionIdle ends a session unused for that long; 1h when zero.
	SessionIdle time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// UnknownSessions rate-limits lookups of session cookies that turn out
	// unknown, per client address (package authmiss); one with the
	// defaults when nil.
	UnknownSessions *authmiss.Limiter

	sessions *sessions
	throttle *throttle
	pages    *pages
}

// maxFormBytes bounds a POST body, uploads included: the admin API's own
// default body limit, and below net/http's 10 MiB for urlencoded forms, so
// that the answer says which limit was hit.
const maxFormBytes = 8 << 20

// access is who may open a page; the API still decides what it shows.
type access int

const (
	public   access = iota // no session
	signedIn               // any session
)

// route is one page. Every route is listed in routes, so that the session
// and CSRF checks cannot be forgotten for one.
type route struct {
	pattern string
	access  access
	handle  func(*request) error
}

func (s *Server) routes() []route {
	return []route{
		{"GET /ui/login", public, s.loginPage},
		{"POST /ui/login", public, s.login},
		{"POST /ui/logout", signedIn, s.logout},
		{"GET /ui/{$}", signedIn, s.home},
		{"GET /ui/tenants", signedIn, s.tenants},
		{"POST /ui/tenants", signedIn, s.createTenant},
		{"GET /ui/clusters", signedIn, s.pickTenant("clusters", "Clusters")},
		{"GET /ui/policies", signedIn, s.pickTenant("policies", "Policies")},
		{"GET /ui/decisions", signedIn, s.decisionsHome},
		{"GET /ui/decisions/summary", signedIn, s.fleetSummary},
		{"GET /ui/audit", signedIn, s.audit},
		{"GET /ui/t/{tenant}/clusters", signedIn, s.clusters},
		{"GET /ui/t/{tenant}/clusters/new", signedIn, s.newCluster},
		{"POST /ui/t/{tenant}/clusters", signedIn, s.createCluster},
		{"GET /ui/t/{tenant}/clusters/{cluster}/files/{file}", signedIn, s.downloadArtifact},
		{"POST /ui/t/{tenant}/clusters/{cluster}/credentials", signedIn, s.addCredential},
		{"POST /ui/t/{tenant}/clusters/{cluster}/credentials/{id}/revoke", signedIn, s.revokeCredential},
		{"POST /ui/t/{tenant}/clusters/{cluster}/credentials/{id}/rotate", signedIn, s.rotateCredential},
		{"GET /ui/t/{tenant}/policies", signedIn, s.policies},
		{"GET /ui/t/{tenant}/policies/new", signedIn, s.newPolicy},
		{"GET /ui/t/{tenant}/objects/{kind}/{name}", signedIn, s.object},
		{"POST /ui/t/{tenant}/validate", signedIn, s.validate},
		{"POST /ui/t/{tenant}/apply", signedIn, s.apply},
		{"GET /ui/t/{tenant}/objects/{kind}/{name}/diff", signedIn, s.diff},
		{"POST /ui/t/{tenant}/objects/{kind}/{name}/rollback", signedIn, s.rollback},
		{"GET /ui/t/{tenant}/test", signedIn, s.testPage},
		{"POST /ui/t/{tenant}/test", signedIn, s.runTest},
		{"GET /ui/t/{tenant}/decisions", signedIn, s.decisions},
		{"GET /ui/t/{tenant}/decisions/summary", signedIn, s.decisionsSummary},
		{"GET /ui/t/{tenant}/decisions/{id}", signedIn, s.decision},
		{"GET /ui/t/{tenant}/audit", signedIn, s.audit},
	}
}

// Handler returns the UI's routes and its static files.
func (s *Server) Handler() (http.Handler, error) {
	if s.API == nil || s.Logger == nil || s.Sessions == nil {
		return nil, errors.New("ui: API, Logger and Sessions are required")
	}
	if s.SessionTTL == 0 {
		s.SessionTTL = 8 * time.Hour
	}
	if s.SessionIdle == 0 {
		s.SessionIdle = time.Hour
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	// now goes through s.Now at each call, so that a test may set the
	// clock after Handler.
	now := func() time.Time { return s.Now() }
	if s.UnknownSessions == nil {
		s.UnknownSessions = authmiss.New(now, 0, 0, 0)
	}
	s.sessions = &sessions{store: s.Sessions, now: now, ttl: s.SessionTTL, idle: s.SessionIdle, misses: s.UnknownSessions}
	s.throttle = newThrottle(s.Now)
	var err error
	if s.pages, err = loadPages(); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	for _, rt := range s.routes() {
		mux.Handle(rt.pattern, s.wrap(rt))
	}
	mux.Handle("GET /ui/static/", s.pages.static)
	mux.Handle("/ui/", s.wrap(route{pattern: "/ui/", access: public, handle: func(r *request) error {
		return notFound("no page at %s", r.r.URL.Path)
	}}))
	return securityHeaders(mux), nil
}

// parseForm reads a POST's form, urlencoded or multipart (files over 1 MiB
// go to temporary files), and says clearly when it is too large.
func parseForm(r *http.Request) error {
	// ParseMultipartForm drops ParseForm's error on a urlencoded body, so
	// that one is asked first.
	err := r.ParseForm()
	if err == nil {
		err = r.ParseMultipartForm(1 << 20)
	}
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil, errors.Is(err, http.ErrNotMultipart):
		return nil
	case errors.As(err, &tooLarge):
		return &fault.Error{Code: fault.TooLarge, Message: fmt.Sprintf("the form is larger than %d MiB", maxFormBytes>>20)}
	}
	return badRequest("reading the form: %v", err)
}

// securityHeaders sets the headers every answer carries. Scripts come only
// from the gateway itself, never inline; CodeMirror sets inline styles,
// hence style-src 'unsafe-inline'. No page may be framed.
func securityHeaders(next http.Handler) http.Handler {
	const csp = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// wrap checks the session and, on every POST, the CSRF token, then runs
// the page and renders any error it returns.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := &request{s: s, w: w, r: r}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.Logger.Error("panic in UI handler", "panic", fmt.Sprint(p), "stack", string(debug.Stack()),
					"method", r.Method, "path", r.URL.Path)
				req.fail(fmt.Errorf("panic"))
			}
		}()
		w.Header().Set("Cache-Control", "no-store")
		sess, err := s.sessions.get(r)
		var limited *errTooManyUnknown
		if errors.As(err, &limited) && rt.access == signedIn {
			secs := max(1, int(math.Ceil(limited.wait.Seconds())))
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			req.fail(&fault.Error{Code: fault.TooManyRequests, Message: fmt.Sprintf(
				"Too many requests with unknown or expired sessions came from your address. Wait %d seconds, then try again, or sign in again.", secs)})
			return
		}
		if err != nil && rt.access == signedIn {
			s.Logger.Error("UI session lookup", "method", r.Method, "path", r.URL.Path, "error", err)
			req.fail(&fault.Error{Code: fault.Unavailable, Message: "sessions cannot be checked: the database is unavailable; try again shortly"})
			return
		}
		req.sess = sess
		if rt.access == signedIn && req.sess == nil {
			if r.Header.Get("HX-Request") != "" {
				// htmx follows redirects inside the swap; send the whole
				// page to the login instead.
				w.Header().Set("HX-Redirect", "/ui/login")
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
			return
		}
		if r.Method == http.MethodPost {
			// Forms carry at most a policy set or an AdmissionReview.
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if err := parseForm(r); err != nil {
				req.fail(err)
				return
			}
			if err := s.checkCSRF(req); err != nil {
				req.fail(err)
				return
			}
		}
		if err := rt.handle(req); err != nil {
			req.fail(err)
		}
	})
}
