package ui

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestPagesNeedASession(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	for _, path := range []string{"/ui/", "/ui/tenants", "/ui/t/a/clusters", "/ui/t/a/policies", "/ui/t/a/decisions", "/ui/audit"} {
		res, _ := b.getRes(path)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/login" {
			t.Errorf("GET %s without a session = %d to %q, want 303 to /ui/login", path, res.StatusCode, res.Header.Get("Location"))
		}
	}
}

func TestSignInAndOut(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	code, page := b.get("/ui/login")
	if code != http.StatusOK || !strings.Contains(page, `<label for="token">Token</label>`) ||
		!strings.Contains(page, `<button type="submit">Sign in</button>`) || h1s(page) != 1 {
		t.Fatalf("login page = %d:\n%s", code, page)
	}

	code, page = b.login("pcadm_wrong")
	if code != http.StatusUnauthorized || !strings.Contains(page, "Sign-in failed: that token is not valid") {
		t.Fatalf("wrong token = %d:\n%s", code, page)
	}
	if strings.Contains(page, "pcadm_wrong") {
		t.Error("the sign-in page echoes the token")
	}

	_, page = b.get("/ui/login")
	req, _ := http.NewRequest("POST", e.srv.URL+"/ui/login",
		strings.NewReader(url.Values{"token": {e.adminA}, "csrf": {csrfOf(page)}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, _ := b.do(req)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in = %d", res.StatusCode)
	}
	var sess *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == sessionCookie {
			sess = c
		}
	}
	switch {
	case sess == nil:
		t.Fatal("no session cookie")
	case !sess.HttpOnly || !sess.Secure || sess.SameSite != http.SameSiteStrictMode || sess.Path != "/":
		t.Errorf("session cookie %+v: want HttpOnly, Secure, SameSite=Strict, Path=/", sess)
	case sess.MaxAge <= 0 || sess.MaxAge > 8*3600:
		t.Errorf("session cookie Max-Age %d, want at most 8h", sess.MaxAge)
	case strings.Contains(sess.Value, e.adminA):
		t.Error("the session cookie holds the token")
	}

	// A tenant admin lands on the tenant's clusters.
	res, _ = b.getRes("/ui/")
	if loc := res.Header.Get("Location"); loc != "/ui/t/a/clusters" {
		t.Errorf("home of a tenant admin redirects to %q", loc)
	}
	code, page = b.get("/ui/t/a/clusters")
	if code != http.StatusOK || strings.Contains(page, e.adminA) {
		t.Fatalf("clusters = %d; the page must never hold the token", code)
	}
	b.csrf = csrfOf(page)

	if code, _ := b.post("/ui/logout", nil); code != http.StatusOK {
		t.Fatalf("sign out = %d", code)
	}
	if res, _ := b.getRes("/ui/t/a/clusters"); res.StatusCode != http.StatusSeeOther {
		t.Errorf("after sign-out: %d, want 303 to the login", res.StatusCode)
	}
}

// Finding 30.7: behind a proxy every browser has one address. Failed
// sign-ins from it earn a 429 with Retry-After, but a valid token still
// signs in at once: one client cannot lock the others out.
func TestSignInThrottle(t *testing.T) {
	e := newEnv(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e.ui.Now = func() time.Time { return now }
	e.ui.throttle.now = e.ui.Now
	attacker := e.browser()
	for i := range freeFailures {
		if code, _ := attacker.login("pcadm_wrong" + strconv.Itoa(i)); code != http.StatusUnauthorized {
			t.Fatalf("failure %d = %d, want 401", i+1, code)
		}
	}
	res, page := attacker.loginRes("pcadm_wrongagain")
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "1" ||
		!strings.Contains(page, "too many sign-ins failed from your address or with this token") {
		t.Fatalf("failure %d = %d (Retry-After %q):\n%s", freeFailures+1, res.StatusCode, res.Header.Get("Retry-After"), page)
	}
	// Other users behind the same proxy sign in with a valid token at
	// once.
	for _, tok := range []string{e.operator, e.adminA} {
		if code, page := e.browser().login(tok); code != http.StatusSeeOther {
			t.Fatalf("a valid token from a locked-out address = %d, want 303:\n%s", code, page)
		}
	}
	// The address's failures still count: the next wrong token waits
	// longer.
	res, _ = attacker.loginRes("pcadm_wrongonceagain")
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "2" {
		t.Fatalf("after a valid sign-in, another failure = %d (Retry-After %q), want 429 and 2", res.StatusCode, res.Header.Get("Retry-After"))
	}
}

// loginRes is login with the whole answer.
func (b *browser) loginRes(token string) (*http.Response, string) {
	b.e.t.Helper()
	_, page := b.get("/ui/login")
	req, _ := http.NewRequest("POST", b.e.srv.URL+"/ui/login",
		strings.NewReader(url.Values{"token": {token}, "csrf": {csrfOf(page)}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

// Failures count against the address and the token's id prefix: the same
// token from other addresses is locked out too, another token is not.
func TestThrottleKeysAddressAndToken(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	th := newThrottle(func() time.Time { return now })
	tok := tokenKey("pcadm_AAAAAAAAmistyped")
	if tok == "" || tok != tokenKey("pcadm_AAAAAAAAmistypedagain") || tok == tokenKey("pcadm_BBBBBBBBxxxx") {
		t.Fatalf("token keys: %q, %q, %q", tok, tokenKey("pcadm_AAAAAAAAmistypedagain"), tokenKey("pcadm_BBBBBBBBxxxx"))
	}
	if tokenKey("wrong") != "" || tokenKey("pcadm_short") != "" {
		t.Error("a token without an id has a key")
	}
	for range freeFailures + 1 {
		th.fail(addrKey("10.0.0.1"), tok)
	}
	for _, tc := range []struct {
		addr, token string
		locked      bool
	}{
		{"10.0.0.1", "pcadm_CCCCCCCCxxxx", true},
		{"10.0.0.2", "pcadm_AAAAAAAAother", true},
		{"10.0.0.2", "pcadm_BBBBBBBBxxxx", false},
		{"10.0.0.2", "", false},
	} {
		if got := th.wait(addrKey(tc.addr), tokenKey(tc.token)) > 0; got != tc.locked {
			t.Errorf("%s with %q: locked %v, want %v", tc.addr, tc.token, got, tc.locked)
		}
	}
	// A key quiet for maxLockout starts over.
	now = now.Add(maxLockout + time.Second)
	th.fail(addrKey("10.0.0.1"))
	if w := th.wait(addrKey("10.0.0.1")); w != 0 {
		t.Errorf("one failure after a quiet %v: wait %v, want none", maxLockout, w)
	}
}

// The failure map stays bounded however many addresses fail, forgetting
// the key that failed least recently (in O(1): no scan under the lock).
func TestThrottleIsBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	th := newThrottle(func() time.Time { return now })
	for i := range maxTracked + 1000 {
		th.fail("addr:" + strconv.Itoa(i))
	}
	if len(th.m) > maxTracked {
		t.Fatalf("%d keys tracked, want at most %d", len(th.m), maxTracked)
	}
	last := "addr:" + strconv.Itoa(maxTracked+999)
	if _, ok := th.m[last]; !ok {
		t.Error("the latest failure is not tracked")
	}
	if _, ok := th.m["addr:0"]; ok {
		t.Error("the oldest failure is still tracked")
	}
}

func TestCSRFRefused(t *testing.T) {
	e := newEnv(t)
	b := e.signIn(e.operator)
	for name, form := range map[string]url.Values{
		"missing": {"name": {"c1"}, "csrf": {""}},
		"wrong":   {"name": {"c1"}, "csrf": {"x" + b.csrf}},
	} {
		if code, page := b.post("/ui/tenants", form); code != http.StatusForbidden || !strings.Contains(page, "CSRF") {
			t.Errorf("%s CSRF token: %d", name, code)
		}
	}
	// The token of another session is no better.
	other := e.signIn(e.operator)
	if code, _ := b.post("/ui/tenants", url.Values{"name": {"c1"}, "csrf": {other.csrf}}); code != http.StatusForbidden {
		t.Errorf("another session's CSRF token: %d", code)
	}
	// A cross-site request is refused whatever it carries.
	req, _ := http.NewRequest("POST", e.srv.URL+"/ui/tenants", strings.NewReader(url.Values{"name": {"c1"}, "csrf": {b.csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if res, _ := b.do(req); res.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site POST: %d", res.StatusCode)
	}
	// Sign-in without the login page's cookie.
	if code, _ := e.browser().postForm("/ui/login", url.Values{"token": {e.operator}, "csrf": {"forged"}}); code != http.StatusForbidden {
		t.Errorf("sign-in without its CSRF cookie: %d", code)
	}
	if _, page := b.get("/ui/tenants"); strings.Contains(page, ">c1<") {
		t.Error("a refused form created a tenant")
	}
}

func TestSecurityHeaders(t *testing.T) {
	e := newEnv(t)
	b := e.signIn(e.operator)
	for _, path := range []string{"/ui/login", "/ui/tenants", "/ui/nowhere", "/ui/static/js/app.js"} {
		res, _ := b.getRes(path)
		csp := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"script-src 'self';", "frame-ancestors 'none'", "default-src 'none'", "form-action 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", path, csp, want)
			}
		}
		if res.Header.Get("X-Frame-Options") != "DENY" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: X-Frame-Options %q, X-Content-Type-Options %q", path, res.Header.Get("X-Frame-Options"), res.Header.Get("X-Content-Type-Options"))
		}
	}
}

func TestLargeFormRefused(t *testing.T) {
	e := newEnv(t)
	b := e.signIn(e.operator)
	code, page := b.post("/ui/t/a/validate", url.Values{"yaml": {strings.Repeat("x", maxFormBytes)}})
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(page, "the form is larger than 8 MiB") {
		t.Fatalf("a form over the limit = %d:\n%.300s", code, page)
	}
}

// TestRevokedTokenEndsSession: the session holds the token, and the API
// checks it on every call, so revoking the token signs the browser out.
func TestRevokedTokenEndsSession(t *testing.T) {
	e := newEnv(t)
	b := e.signIn(e.adminA)
	who, err := e.api.Tokens.Authenticate(context.Background(), e.adminA)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.api.Tokens.Revoke(context.Background(), 0, who.TokenID); err != nil {
		t.Fatal(err)
	}
	res, _ := b.getRes("/ui/t/a/clusters")
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/login" {
		t.Fatalf("after revocation: %d to %q, want 303 to /ui/login", res.StatusCode, res.Header.Get("Location"))
	}
	if res, _ := b.getRes("/ui/t/a/policies"); res.Header.Get("Location") != "/ui/login" {
		t.Error("the session outlived its revoked token")
	}
}
