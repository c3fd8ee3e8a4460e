package ui

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/portcullis-dev/portcullis/internal/authmiss"
	"github.com/portcullis-dev/portcullis/internal/uisession"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
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

// session is one signed-in browser, as found in the shared store for this
// request. The id comes from the cookie and is never stored: the store
// knows the session by the id's SHA-256, and whatever else needs a secret
// (the CSRF token, the key that seals an issued credential) is derived
// from the id, so a copy of the database yields neither.
type session struct {
	id      string
	idHash  []byte
	tokenID int64
	who     whoAmI
	csrf    string
	expires time.Time
	// issued is the sealed secret-bearing answer of the last cluster or
	// credential created in this session, kept so that its files can be
	// downloaded without the secret ever being in a URL.
	issued []byte
	// flash is a one-time message for this page.
	flash string
}

// sessions keeps sessions in the store that every replica shares, so that
// any replica serves any browser and a rollout signs no one out.
type sessions struct {
	store     uisession.Store
	now       func() time.Time
	ttl, idle time.Duration
	// misses rate-limits lookups of unknown session ids per client
	// address (package authmiss).
	misses *authmiss.Limiter
}

// errTooManyUnknown is sessions.get's answer to an address that presented
// too many unknown session cookies: the lookup was not made.
type errTooManyUnknown struct{ wait time.Duration }

func (e *errTooManyUnknown) Error() string {
	return "too many unknown session cookies from this address"
}

func randomString() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func hashID(id string) []byte {
	h := sha256.Sum256([]byte(id))
	return h[:]
}

// derive is a secret for purpose that only the session id gives: the
// store holds SHA-256(id), from which no HMAC keyed by id follows.
func derive(id, purpose string) []byte {
	m := hmac.New(sha256.New, []byte(id))
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

func (ss *sessions) load(id string, s uisession.Session) *session {
	who := whoAmI{apiv1.WhoAmI{Name: s.Name, Role: s.Role, Tenant: s.Tenant, TokenID: s.TokenID, ExpiresAt: s.TokenExpiresAt}}
	return &session{id: id, idHash: hashID(id), tokenID: s.TokenID, who: who,
		csrf: base64.RawURLEncoding.EncodeToString(derive(id, "csrf")), expires: s.ExpiresAt,
		issued: s.Issued, flash: s.Flash}
}

// create starts a session for a token that the API accepted. A token
// revoked in between is uisession.ErrNotFound.
func (ss *sessions) create(ctx context.Context, who whoAmI) (*session, error) {
	now := ss.now()
	exp := now.Add(ss.ttl)
	if who.ExpiresAt != nil && who.ExpiresAt.Before(exp) {
		exp = *who.ExpiresAt
	}
	id := randomString()
	rec := uisession.Session{IDHash: hashID(id), TokenID: who.TokenID, Name: who.Name, Role: who.Role, Tenant: who.Tenant,
		TokenExpiresAt: who.ExpiresAt, ExpiresAt: exp, IdleExpiresAt: now.Add(ss.idle)}
	if err := ss.store.CreateSession(ctx, rec, now); err != nil {
		return nil, err
	}
	return ss.load(id, rec), nil
}

// get returns the request's session, or nil for none, an unknown or
// forged id, or a session that has expired or whose token is no longer
// valid.
func (ss *sessions) get(r *http.Request) (*session, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil, nil
	}
	// A cookie found unknown a moment ago, or one of many unknown cookies
	// from an address, costs no lookup (issue 30, finding 10).
	key, addr := [32]byte(hashID(c.Value)), clientAddr(r)
	switch v, wait := ss.misses.Check(addr, key); v {
	case authmiss.Unknown:
		return nil, nil
	case authmiss.Limited:
		return nil, &errTooManyUnknown{wait}
	}
	now := ss.now()
	rec, err := ss.store.FindSession(r.Context(), key[:], now, now.Add(ss.idle))
	if errors.Is(err, uisession.ErrNotFound) {
		ss.misses.Miss(addr, key)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ss.misses.Hit(key)
	return ss.load(c.Value, rec), nil
}

func (ss *sessions) delete(ctx context.Context, s *session) error {
	return ss.store.DeleteSession(ctx, s.idHash)
}

// setIssued seals is with a key derived from the session id, so that the
// stored credential opens only for the browser that holds the cookie.
func (ss *sessions) setIssued(ctx context.Context, s *session, is *issued) error {
	plain, err := json.Marshal(is)
	if err != nil {
		return err
	}
	aead, err := sealer(s.id)
	if err != nil {
		return err
	}
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	_, _ = rand.Read(nonce)
	sealed := aead.Seal(nonce, nonce, plain, s.idHash)
	if err := ss.store.SetSessionIssued(ctx, s.idHash, sealed); err != nil {
		return err
	}
	s.issued = sealed
	return nil
}

// getIssued opens the session's issued credential; nil if there is none.
func (ss *sessions) getIssued(s *session) *issued {
	aead, err := sealer(s.id)
	if err != nil || len(s.issued) < aead.NonceSize() {
		return nil
	}
	n := aead.NonceSize()
	plain, err := aead.Open(nil, s.issued[:n], s.issued[n:], s.idHash)
	if err != nil {
		return nil
	}
	var is issued
	if json.Unmarshal(plain, &is) != nil {
		return nil
	}
	return &is
}

func sealer(id string) (cipher.AEAD, error) {
	block, err := aes.NewCipher(derive(id, "issued"))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func (ss *sessions) setFlash(ctx context.Context, s *session, msg string) error {
	return ss.store.SetSessionFlash(ctx, s.idHash, msg)
}

// takeFlash returns the session's one-time message and clears it.
func (ss *sessions) takeFlash(ctx context.Context, s *session) (string, error) {
	m := s.flash
	if m == "" {
		return "", nil
	}
	s.flash = ""
	return m, ss.store.ClearSessionFlash(ctx, s.idHash, m)
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
