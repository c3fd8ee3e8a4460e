package ui

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/api"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/inventory"
	"github.com/portcullis-dev/portcullis/internal/limits"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/policystore"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// env is the UI in front of a real admin API on a fresh database, with
// tenants a and b and a token of each kind.
type env struct {
	t       testing.TB
	ui      *Server
	api     *api.Server
	srv     *httptest.Server
	pool    *pgxpool.Pool
	tenantA int64
	// Tokens: operator; admin and viewer of tenant a; admin of tenant b.
	operator, adminA, viewerA, adminB string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	ca, err := tenancy.LoadOrCreateClientCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a := &api.Server{
		Tokens: adminauth.NewStore(pool), Tenancy: tenancy.NewStore(pool, ca), Policies: policystore.New(pool),
		Inventory: inventory.New(pool), Audit: auditlog.NewStore(pool), Decisions: decisions.NewStore(pool),
		Logger: logger, WebhookURL: "https://gateway.example:8443",
		CABundle: func() ([]byte, error) {
			return []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), nil
		},
		Limits: limits.NewStore(pool), LimitDefaults: limits.Limits{ConcurrentEvaluations: 2, CELCostPerRequest: limits.DefaultCELCostPerRequest},
	}
	a.Snapshot = func(ctx context.Context, tenantID int64) (*policystore.Snapshot, error) {
		return a.Policies.CandidateSnapshot(ctx, tenantID, nil, false)
	}
	a.Namespaces = func(ctx context.Context, tenantID, clusterID int64) (evaluator.NamespaceLookup, error) {
		return evaluator.NamespaceMap{}, nil
	}
	e := &env{t: t, api: a, ui: &Server{API: a.Handler(), Logger: logger, Sessions: a.Tokens}, pool: pool}
	h, err := e.ui.Handler()
	if err != nil {
		t.Fatal(err)
	}
	// TLS, because the session cookie is Secure and a cookie jar keeps
	// such cookies for https only, as browsers do.
	e.srv = httptest.NewTLSServer(h)
	t.Cleanup(e.srv.Close)
	if e.operator, err = a.Tokens.Bootstrap(ctx, "root"); err != nil {
		t.Fatal(err)
	}
	ta, err := a.Tenancy.CreateTenant(ctx, "a", "Tenant A")
	if err != nil {
		t.Fatal(err)
	}
	e.tenantA = ta.ID
	tb, err := a.Tenancy.CreateTenant(ctx, "b", "Tenant B")
	if err != nil {
		t.Fatal(err)
	}
	e.adminA = e.token(ta.ID, "alice", adminauth.RoleAdmin)
	e.viewerA = e.token(ta.ID, "vera", adminauth.RoleViewer)
	e.adminB = e.token(tb.ID, "bob", adminauth.RoleAdmin)
	return e
}

func (e *env) token(tenantID int64, name string, role adminauth.Role) string {
	e.t.Helper()
	_, secret, err := e.api.Tokens.Create(context.Background(), tenantID, name, role, nil, adminauth.Creator{Name: "test"})
	if err != nil {
		e.t.Fatal(err)
	}
	return secret
}

// browser is one client with its own cookies. It does not follow
// redirects, so that tests see them.
type browser struct {
	e    *env
	c    *http.Client
	csrf string
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Transport: e.srv.Client().Transport, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &browser{e: e, c: c}
}

// signIn returns a browser signed in with token.
func (e *env) signIn(token string) *browser {
	e.t.Helper()
	b := e.browser()
	if code, _ := b.login(token); code != http.StatusSeeOther {
		e.t.Fatalf("sign in: status %d, want 303", code)
	}
	// Any page carries the session's CSRF token.
	res, _ := b.getRes("/ui/")
	_, body := b.get(res.Header.Get("Location"))
	b.csrf = csrfOf(body)
	if b.csrf == "" {
		e.t.Fatalf("no CSRF token on a signed-in page:\n%s", body)
	}
	return b
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(body string) string {
	m := csrfInput.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

// login loads the sign-in page and posts the token with its CSRF token.
func (b *browser) login(token string) (int, string) {
	_, page := b.get("/ui/login")
	return b.postForm("/ui/login", url.Values{"token": {token}, "csrf": {csrfOf(page)}})
}

func (b *browser) do(req *http.Request) (*http.Response, string) {
	b.e.t.Helper()
	res, err := b.c.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		b.e.t.Fatal(err)
	}
	return res, string(body)
}

func (b *browser) get(path string) (int, string) {
	res, body := b.getRes(path)
	return res.StatusCode, body
}

func (b *browser) getRes(path string) (*http.Response, string) {
	b.e.t.Helper()
	req, err := http.NewRequest("GET", b.e.srv.URL+path, nil)
	if err != nil {
		b.e.t.Fatal(err)
	}
	return b.do(req)
}

// post sends a form with the session's CSRF token.
func (b *browser) post(path string, form url.Values) (int, string) {
	b.e.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if !form.Has("csrf") {
		form.Set("csrf", b.csrf)
	}
	return b.postForm(path, form)
}

func (b *browser) postForm(path string, form url.Values) (int, string) {
	b.e.t.Helper()
	req, err := http.NewRequest("POST", b.e.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		b.e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, body := b.do(req)
	return res.StatusCode, body
}

// h1s counts the page's <h1> elements.
func h1s(body string) int { return strings.Count(body, "<h1") }
