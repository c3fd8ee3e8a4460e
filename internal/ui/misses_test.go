package ui

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/authmiss"
)

// Finding 30.10: unknown session cookies are rate-limited per client
// address. After the address's budget of lookups that found nothing, a
// page with a cookie this replica has not seen valid is 429 with
// Retry-After, without a lookup; signed-in users of the same address keep
// working, and anyone may still open the sign-in page and sign in.
func TestUnknownSessionCookiesAreRateLimited(t *testing.T) {
	e := newEnv(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e.ui.sessions.misses = authmiss.New(func() time.Time { return now }, 3, time.Minute, 0)
	user := e.signIn(e.adminA)
	attacker := e.browser()
	page := func(path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: randomString()})
		res, _ := attacker.do(req)
		return res
	}
	for i := range 3 {
		if res := page("/ui/tenants"); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("unknown cookie %d = %d, want 303 to the sign-in", i+1, res.StatusCode)
		}
	}
	res := page("/ui/tenants")
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "60" {
		t.Fatalf("a 4th unknown cookie = %d (Retry-After %q), want 429 and 60", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if code, body := user.get("/ui/t/a/clusters"); code != http.StatusOK {
		t.Fatalf("a signed-in user of the same address = %d:\n%s", code, body)
	}
	if res := page("/ui/login"); res.StatusCode != http.StatusOK {
		t.Errorf("the sign-in page with an unknown cookie = %d, want 200", res.StatusCode)
	}
	if code, body := e.browser().login(e.viewerA); code != http.StatusSeeOther || strings.Contains(body, "Too many") {
		t.Errorf("a sign-in from the address = %d, want 303", code)
	}
}
