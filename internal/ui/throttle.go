package ui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"sync"
	"time"
)

// Cookie names. The __Host- prefix makes the browser refuse them unless
// they are Secure, host-only and for path /, so no other host or path can
// plant one.
const (
	sessionCookie = "__Host-portcullis-session"
	// loginCSRFCookie carries the CSRF token of the sign-in form, which has
	// no session yet (double-submit).
	loginCSRFCookie = "__Host-portcullis-login"
	csrfField       = "csrf"
	csrfHeader      = "X-CSRF-Token"
)

// session is one signed-in browser. It lives in this process only: a
// gateway restart signs everyone out, and with several admin replicas the
// load balancer must keep a browser on one (sessions are not shared).
type session struct {
	id      string
	token   string
	who     whoAmI
	csrf    string
	expires time.Time
	// issued is the secret-bearing answer of the last cluster or credential
	// created in this session, kept so that its files can be downloaded
	// without the secret ever being in a URL.
	issued *issued
	// flash is a one-time message for the next page.
	flash string
}

type sessions struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]*session
}

func newSessions(now func() time.Time) *sessions {
	return &sessions{now: now, m: map[string]*session{}}
}

func randomString() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// create starts a session for a token that the API accepted.
func (ss *sessions) create(token string, who whoAmI, ttl time.Duration) *session {
	exp := ss.now().Add(ttl)
	if who.ExpiresAt != nil && who.ExpiresAt.Before(exp) {
		exp = *who.ExpiresAt
	}
	s := &session{id: randomString(), token: token, who: who, csrf: randomString(), expires: exp}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	// Sweep expired sessions here, so that the map stays bounded by the
	// sessions of the last TTL without a background goroutine.
	now := ss.now()
	for id, o := range ss.m {
		if now.After(o.expires) {
			delete(ss.m, id)
		}
	}
	ss.m[s.id] = s
	return s
}

func (ss *sessions) get(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.m[c.Value]
	if s != nil && ss.now().After(s.expires) {
		delete(ss.m, c.Value)
		return nil
	}
	return s
}

func (ss *sessions) delete(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.m, id)
}

func (ss *sessions) setIssued(s *session, is *issued) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s.issued = is
}

func (ss *sessions) getIssued(s *session) *issued {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return s.issued
}

// setCookie sets a cookie for maxAge (relative, so that the browser's
// clock does not matter); zero or less deletes it.
func setCookie(w http.ResponseWriter, name, value string, maxAge time.Duration) {
	c := &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode,
		MaxAge: int(maxAge.Seconds())}
	if c.MaxAge <= 0 {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

func equalSecret(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// checkCSRF refuses a POST whose token does not match the session's (or,
// for the sign-in form, the login cookie's). Forms send it as a field and
// htmx requests carry the same field; SameSite=Strict cookies are a
// second line, and a cross-site Origin is refused outright.
func (s *Server) checkCSRF(r *request) error {
	if site := r.r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		return forbidden("cross-site request refused")
	}
	got := r.r.Header.Get(csrfHeader)
	if got == "" {
		got = r.r.PostFormValue(csrfField)
	}
	want := ""
	if r.sess != nil {
		want = r.sess.csrf
	} else if c, err := r.r.Cookie(loginCSRFCookie); err == nil {
		want = c.Value
	}
	if !equalSecret(got, want) {
		return forbidden("the form has expired or did not come from this site (CSRF check failed); reload the page and try again")
	}
	return nil
}

// throttle slows down repeated failed sign-ins from one client address:
// after freeFailures failures, each further attempt must wait twice as
// long as the one before, up to maxLockout. A success clears the count.
type throttle struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]*failures
}

type failures struct {
	n     int
	until time.Time
	last  time.Time
}

const (
	freeFailures = 3
	maxLockout   = 5 * time.Minute
	// maxTracked bounds the memory an attacker with many addresses can
	// make the throttle use.
	maxTracked = 100_000
)

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, m: map[string]*failures{}}
}

func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// wait is how long the client must still wait before trying again.
func (t *throttle) wait(addr string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.m[addr]
	if f == nil {
		return 0
	}
	return max(0, f.until.Sub(t.now()))
}

func (t *throttle) fail(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if len(t.m) >= maxTracked {
		for a, f := range t.m {
			if now.Sub(f.last) > maxLockout {
				delete(t.m, a)
			}
		}
	}
	f := t.m[addr]
	if f == nil {
		f = &failures{}
		t.m[addr] = f
	}
	f.n++
	f.last = now
	if f.n > freeFailures {
		d := time.Second << min(f.n-freeFailures-1, 16)
		f.until = now.Add(min(d, maxLockout))
	}
}

func (t *throttle) succeed(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, addr)
}

func (ss *sessions) setFlash(s *session, msg string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s.flash = msg
}

func (ss *sessions) takeFlash(s *session) string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	m := s.flash
	s.flash = ""
	return m
}
