package ui

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/uisession"
)

// replica is a second UI server on the same database and admin API, as a
// second gateway replica would be.
func (e *env) replica() *env {
	e.t.Helper()
	r := *e
	r.ui = &Server{API: e.ui.API, Logger: e.ui.Logger, Sessions: e.api.Tokens}
	h, err := r.ui.Handler()
	if err != nil {
		e.t.Fatal(err)
	}
	r.srv = httptest.NewTLSServer(h)
	e.t.Cleanup(r.srv.Close)
	return &r
}

// via is the same browser, with the same cookies, talking to e: both test
// servers listen on 127.0.0.1, and cookies do not care about the port.
func (b *browser) via(e *env) *browser { return &browser{e: e, c: b.c, csrf: b.csrf} }

// sessionID is the session cookie the browser holds.
func (b *browser) sessionID() string {
	u, _ := url.Parse(b.e.srv.URL)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == sessionCookie {
			return c.Value
		}
	}
	return ""
}

func (b *browser) setSessionID(id string) {
	u, _ := url.Parse(b.e.srv.URL)
	b.c.Jar.SetCookies(u, []*http.Cookie{{Name: sessionCookie, Value: id, Path: "/", Secure: true}})
}

// mustBeSignedOut asserts that a page redirects to the sign-in page.
func (b *browser) mustBeSignedOut(t *testing.T, what string) {
	t.Helper()
	res, _ := b.getRes("/ui/t/a/clusters")
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/login" {
		t.Errorf("%s: %d to %q, want 303 to /ui/login", what, res.StatusCode, res.Header.Get("Location"))
	}
}

func (e *env) sessionRows() int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM ui_sessions`).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func TestSessionSharedByReplicas(t *testing.T) {
	one := newEnv(t)
	two := one.replica()
	b1 := one.signIn(one.operator)
	b2 := b1.via(two)

	// The other replica knows the session, its user and its CSRF token.
	code, page := b2.get("/ui/tenants")
	if code != http.StatusOK || !strings.Contains(page, "root") {
		t.Fatalf("tenants on the second replica = %d:\n%.500s", code, page)
	}
	if got := csrfOf(page); got != b1.csrf {
		t.Errorf("CSRF token on the second replica %q, on the first %q", got, b1.csrf)
	}
	// A form from one replica's page is accepted by the other, and the
	// one-time message it leaves is shown by the first, once.
	if code, page := b2.post("/ui/tenants", url.Values{"name": {"c1"}}); code != http.StatusSeeOther {
		t.Fatalf("create a tenant on the second replica = %d:\n%.500s", code, page)
	}
	if _, page := b1.get("/ui/tenants"); !strings.Contains(page, `role="status"`) || !strings.Contains(page, ">c1<") {
		t.Errorf("the first replica lacks the tenant or the message:\n%.2000s", page)
	}
	if _, page := b1.get("/ui/tenants"); strings.Contains(page, `role="status"`) {
		t.Error("the one-time message was shown twice")
	}

	// A credential issued through one replica downloads from the other.
	if code, page := b1.post("/ui/t/a/clusters", url.Values{"name": {"prod"}, "auth": {"token"}}); code != http.StatusOK {
		t.Fatalf("add cluster = %d:\n%.500s", code, page)
	}
	if code, kc := b2.get("/ui/t/a/clusters/prod/files/kubeconfig.yaml"); code != http.StatusOK || !strings.Contains(kc, "token:") {
		t.Fatalf("kubeconfig from the second replica = %d:\n%s", code, kc)
	}

	// Sign-out on one replica ends the session on the other.
	if code, _ := b2.post("/ui/logout", nil); code != http.StatusOK {
		t.Fatalf("sign out = %d", code)
	}
	b1.mustBeSignedOut(t, "first replica after sign-out on the second")
	if n := one.sessionRows(); n != 0 {
		t.Errorf("%d session rows after sign-out, want 0", n)
	}
}

func TestRevokedTokenEndsSessionOnEveryReplica(t *testing.T) {
	one := newEnv(t)
	two := one.replica()
	b1 := one.signIn(one.adminA)
	b2 := b1.via(two)
	if code, _ := b2.get("/ui/t/a/clusters"); code != http.StatusOK {
		t.Fatalf("second replica before revocation = %d", code)
	}
	who, err := one.api.Tokens.Authenticate(context.Background(), one.adminA)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := one.api.Tokens.Revoke(context.Background(), 0, who.TokenID); err != nil {
		t.Fatal(err)
	}
	b2.mustBeSignedOut(t, "second replica after revocation")
	b1.mustBeSignedOut(t, "first replica after revocation")
	// htmx requests are sent to the sign-in page as a whole.
	req, _ := http.NewRequest("GET", one.srv.URL+"/ui/t/a/decisions/summary", nil)
	req.Header.Set("HX-Request", "true")
	if res, _ := b1.do(req); res.StatusCode != http.StatusUnauthorized || res.Header.Get("HX-Redirect") != "/ui/login" {
		t.Errorf("htmx after revocation: %d, HX-Redirect %q", res.StatusCode, res.Header.Get("HX-Redirect"))
	}
	if n := one.sessionRows(); n != 0 {
		t.Errorf("%d session rows after the token's revocation was noticed, want 0", n)
	}
}

func TestSessionExpiry(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	one := newEnv(t)
	one.ui.Now = clock
	two := one.replica()
	two.ui.Now = clock
	b1 := one.signIn(one.adminA)
	b2 := b1.via(two)

	// Used within the idle time, a session lives on, on any replica ...
	for i, b := range []*browser{b2, b1, b2, b1} {
		now = now.Add(50 * time.Minute)
		if code, _ := b.get("/ui/t/a/clusters"); code != http.StatusOK {
			t.Fatalf("after %d x 50 min of use = %d, want 200", i+1, code)
		}
	}
	// ... until its absolute end, 8 h after sign-in.
	now = now.Add(4*time.Hour + 50*time.Minute)
	b2.mustBeSignedOut(t, "after 8 h 10 min")

	// Unused for longer than the idle time, it ends.
	b3 := one.signIn(one.adminA)
	now = now.Add(61 * time.Minute)
	b3.via(two).mustBeSignedOut(t, "idle for 61 min")

	// Expired rows go: the refused ones at once, the others with the next
	// sign-in.
	b4 := one.signIn(one.viewerA)
	now = now.Add(9 * time.Hour)
	if n := one.sessionRows(); n != 1 {
		t.Fatalf("%d session rows, want b4's only", n)
	}
	one.signIn(one.operator)
	if n := one.sessionRows(); n != 1 {
		t.Errorf("%d session rows after a sign-in swept the expired ones, want 1", n)
	}
	b4.mustBeSignedOut(t, "after 9 h")
}

func TestForgedSessionRefused(t *testing.T) {
	e := newEnv(t)
	b := e.signIn(e.operator)
	var idHash []byte
	if err := e.pool.QueryRow(context.Background(), `SELECT id_hash FROM ui_sessions`).Scan(&idHash); err != nil {
		t.Fatal(err)
	}
	for name, id := range map[string]string{
		"unknown":           randomString(),
		"garbage":           "forged",
		"the stored hash":   base64.RawURLEncoding.EncodeToString(idHash),
		"the hash, in hex":  hex.EncodeToString(idHash),
		"the id, truncated": b.sessionID()[:20],
	} {
		f := e.browser()
		f.setSessionID(id)
		f.mustBeSignedOut(t, name+" session id")
	}
	// The real one still works.
	if code, _ := b.get("/ui/tenants"); code != http.StatusOK {
		t.Errorf("the real session = %d", code)
	}
}

// TestNoSecretInSessionStore: the session table holds neither the token,
// nor the session id, nor an issued credential's secret in clear.
func TestNoSecretInSessionStore(t *testing.T) {
	e := newEnv(t)
	b := e.signIn(e.adminA)
	code, page := b.post("/ui/t/a/clusters", url.Values{"name": {"prod"}, "auth": {"token"}})
	if code != http.StatusOK {
		t.Fatalf("add cluster = %d", code)
	}
	m := regexp.MustCompile(`token: (\S+)`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no credential secret on the onboarding page:\n%s", page)
	}
	var dump string
	if err := e.pool.QueryRow(context.Background(),
		`SELECT string_agg(row_to_json(s)::text, E'\n') FROM ui_sessions s`).Scan(&dump); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dump, `"issued":"\\x`) {
		t.Fatalf("no issued credential stored:\n%s", dump)
	}
	id := b.sessionID()
	for name, secret := range map[string]string{"admin token": e.adminA, "session id": id, "cluster credential": m[1]} {
		for _, form := range []string{secret, hex.EncodeToString([]byte(secret)), base64.StdEncoding.EncodeToString([]byte(secret))} {
			if strings.Contains(dump, form) {
				t.Errorf("the %s is in the session table:\n%s", name, dump)
			}
		}
	}
}

// downStore is the session store with the database gone.
type downStore struct{ uisession.Store }

func (downStore) FindSession(context.Context, []byte, time.Time, time.Time) (uisession.Session, error) {
	return uisession.Session{}, errors.New("connection refused")
}

func (downStore) CreateSession(context.Context, uisession.Session, time.Time) error {
	return errors.New("connection refused")
}

// TestSessionStoreDown: without the database a page says so with 503; it
// neither signs the browser out nor lets it in.
func TestSessionStoreDown(t *testing.T) {
	e := newEnv(t)
	b := e.signIn(e.operator)
	e.ui.sessions.store = downStore{e.ui.sessions.store}
	code, page := b.get("/ui/tenants")
	if code != http.StatusServiceUnavailable || !strings.Contains(page, "the database is unavailable") {
		t.Errorf("a page with the session store down = %d:\n%.500s", code, page)
	}
	code, page = e.browser().login(e.operator)
	if code != http.StatusServiceUnavailable || !strings.Contains(page, "the session cannot be stored") {
		t.Errorf("sign-in with the session store down = %d:\n%.500s", code, page)
	}
	if b.sessionID() == "" {
		t.Error("the session cookie was dropped")
	}
}
