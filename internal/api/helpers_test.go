package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/inventory"
	"github.com/portcullis-dev/portcullis/internal/limits"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/policystore"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

const testCABundle = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func TestMain(m *testing.M) { pgtest.Main(m) }

// env is an API server on a fresh database with two tenants, a and b, and
// a token of each kind.
type env struct {
	t    *testing.T
	s    *Server
	srv  *httptest.Server
	pool *pgxpool.Pool
	// Tokens: operator; admin and viewer of tenant a; admin of tenant b.
	operator, adminA, viewerA, adminB string
	tenantA, tenantB                  tenancy.Tenant
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	ca, err := tenancy.LoadOrCreateClientCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, pool: pool, s: &Server{
		Tokens:        adminauth.NewStore(pool),
		Tenancy:       tenancy.NewStore(pool, ca),
		Policies:      policystore.New(pool),
		Inventory:     inventory.New(pool),
		Audit:         auditlog.NewStore(pool),
		Decisions:     decisions.NewStore(pool),
		Limits:        limits.NewStore(pool),
		LimitDefaults: limits.Limits{ConcurrentEvaluations: 2, CELCostPerRequest: limits.DefaultCELCostPerRequest},
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		WebhookURL:    "https://gateway.example:8443",
		CABundle:      func() ([]byte, error) { return []byte(testCABundle), nil },
	}}
	e.s.Snapshot, e.s.Namespaces = storeSnapshots(e.s.Policies), storeNamespaces(e.s.Inventory)
	e.srv = httptest.NewServer(e.s.Handler())
	t.Cleanup(e.srv.Close)
	if e.operator, err = e.s.Tokens.Bootstrap(ctx, "root"); err != nil {
		t.Fatal(err)
	}
	if e.tenantA, err = e.s.Tenancy.CreateTenant(ctx, "a", "Tenant A"); err != nil {
		t.Fatal(err)
	}
	if e.tenantB, err = e.s.Tenancy.CreateTenant(ctx, "b", "Tenant B"); err != nil {
		t.Fatal(err)
	}
	e.adminA = e.token(e.tenantA.ID, "alice", adminauth.RoleAdmin)
	e.viewerA = e.token(e.tenantA.ID, "vera", adminauth.RoleViewer)
	e.adminB = e.token(e.tenantB.ID, "bob", adminauth.RoleAdmin)
	return e
}

func (e *env) token(tenantID int64, name string, role adminauth.Role) string {
	e.t.Helper()
	_, secret, err := e.s.Tokens.Create(context.Background(), tenantID, name, role, nil, adminauth.Creator{Name: "test"})
	if err != nil {
		e.t.Fatal(err)
	}
	return secret
}

// do sends a request; body is JSON-encoded unless it is a string or []byte.
// It returns the status and the raw answer.
func (e *env) do(token, method, path string, body any) (int, []byte) {
	e.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = bytes.NewBufferString(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		r = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, r)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, out
}

// doJSON is do, decoding a 2xx answer into out and failing the test on
// any other status than want.
func (e *env) doJSON(token, method, path string, body any, want int, out any) {
	e.t.Helper()
	code, raw := e.do(token, method, path, body)
	if code != want {
		e.t.Fatalf("%s %s = %d %s, want %d", method, path, code, raw, want)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			e.t.Fatalf("%s %s: decode %s: %v", method, path, raw, err)
		}
	}
}

// statusOf decodes a Status answer.
func statusOf(t *testing.T, raw []byte) (code int32, reason, message string, causes []string) {
	t.Helper()
	var st struct {
		Kind    string
		Code    int32
		Reason  string
		Message string
		Details struct {
			Causes []struct{ Field, Message string }
		}
	}
	if err := json.Unmarshal(raw, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("not a Status: %s (%v)", raw, err)
	}
	for _, c := range st.Details.Causes {
		causes = append(causes, c.Field+": "+c.Message)
	}
	return st.Code, st.Reason, st.Message, causes
}
