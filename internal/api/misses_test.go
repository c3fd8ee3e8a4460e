package api

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/authmiss"
)

// Finding 30.10: unknown admin tokens are rate-limited per client address.
// After the address's budget of lookups that found nothing, a token this
// replica has not seen valid is refused with 429 and Retry-After without a
// lookup; a token found unknown is refused for a minute without a lookup;
// a token seen valid still works.
func TestUnknownTokensAreRateLimited(t *testing.T) {
	e := newEnv(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e.s.UnknownTokens = authmiss.New(func() time.Time { return now }, 3, time.Minute, 0)
	whoami := func(token string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", e.srv.URL+"/api/v1/whoami", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, string(b)
	}
	if code, _, body := whoami(e.adminA); code != 200 {
		t.Fatalf("whoami = %d: %s", code, body)
	}
	wrong := []string{adminauth.NewToken(), adminauth.NewToken(), adminauth.NewToken()}
	for _, tok := range wrong {
		if code, _, body := whoami(tok); code != http.StatusUnauthorized {
			t.Fatalf("unknown token = %d: %s", code, body)
		}
	}
	code, h, body := whoami(adminauth.NewToken())
	if code != http.StatusTooManyRequests || h.Get("Retry-After") != "60" || !strings.Contains(body, "too many requests with unknown admin tokens from your address") {
		t.Fatalf("a 4th unknown token = %d (Retry-After %q): %s", code, h.Get("Retry-After"), body)
	}
	// A token found unknown is answered 401 again, as before, at once.
	if code, _, _ := whoami(wrong[0]); code != http.StatusUnauthorized {
		t.Errorf("a known unknown token = %d, want 401", code)
	}
	// The token seen valid works; one this replica has not seen waits
	// like an unknown one (docs/admin-api.md).
	if code, _, body := whoami(e.adminA); code != 200 {
		t.Errorf("a token seen valid = %d: %s", code, body)
	}
	if code, _, _ := whoami(e.viewerA); code != http.StatusTooManyRequests {
		t.Errorf("a valid token not seen yet = %d, want 429", code)
	}
	// Malformed tokens cost no lookup and are answered 401 as ever.
	if code, _, _ := whoami("not-a-token"); code != http.StatusUnauthorized {
		t.Errorf("a malformed token = %d, want 401", code)
	}
	now = now.Add(time.Minute)
	if code, _, body := whoami(e.viewerA); code != 200 {
		t.Errorf("after the wait, a valid token = %d: %s", code, body)
	}
}
