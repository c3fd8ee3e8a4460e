package adminauth_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestBootstrapOnceAndAuthenticate(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := adminauth.NewStore(pool)

	// Racing bootstraps create exactly one operator token.
	var wg sync.WaitGroup
	tokens := make([]string, 4)
	errs := make([]error, 4)
	for i := range tokens {
		wg.Add(1)
		go func() { defer wg.Done(); tokens[i], errs[i] = s.Bootstrap(ctx, "bootstrap") }()
	}
	wg.Wait()
	var token string
	for i, err := range errs {
		switch {
		case err == nil && token == "":
			token = tokens[i]
		case err == nil:
			t.Fatal("two bootstraps both created a token")
		case !errors.Is(err, adminauth.ErrAlreadyBootstrapped):
			t.Fatalf("bootstrap: %v", err)
		}
	}
	if !strings.HasPrefix(token, adminauth.Prefix) || len(token) < len(adminauth.Prefix)+43 {
		t.Fatalf("token %q lacks the prefix or 256 bits", token)
	}

	var stored []byte
	if err := pool.QueryRow(ctx, `SELECT token_hash FROM admin_tokens`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(stored), token) || string(stored) != string(adminauth.Hash(token)) {
		t.Fatal("the stored value is not the token's SHA-256")
	}

	p, err := s.Authenticate(ctx, token)
	if err != nil || p.Role != adminauth.RoleOperator {
		t.Fatalf("Authenticate(valid) = %+v, %v", p, err)
	}
	var lastUsed *time.Time
	if err := pool.QueryRow(ctx, `SELECT last_used_at FROM admin_tokens`).Scan(&lastUsed); err != nil || lastUsed == nil {
		t.Fatalf("last_used_at after a use = %v, %v", lastUsed, err)
	}
	for name, bad := range map[string]string{
		"empty":        "",
		"no prefix":    strings.TrimPrefix(token, adminauth.Prefix),
		"wrong secret": adminauth.NewToken(),
		"truncated":    token[:len(token)-1],
	} {
		if _, err := s.Authenticate(ctx, bad); !errors.Is(err, adminauth.ErrUnauthenticated) {
			t.Errorf("%s: Authenticate = %v, want ErrUnauthenticated", name, err)
		}
	}

	if _, err := pool.Exec(ctx, `UPDATE admin_tokens SET revoked_at = now()`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, token); !errors.Is(err, adminauth.ErrUnauthenticated) {
		t.Fatalf("revoked token: %v", err)
	}
	if _, err := pool.Exec(ctx, `UPDATE admin_tokens SET revoked_at = NULL, expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, token); !errors.Is(err, adminauth.ErrUnauthenticated) {
		t.Fatalf("expired token: %v", err)
	}
}

func TestListAndRevokeAreScopedToTheTenant(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := adminauth.NewStore(pool)
	var a, b int64
	if err := pool.QueryRow(ctx, `INSERT INTO tenants (name) VALUES ('a') RETURNING id`).Scan(&a); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `INSERT INTO tenants (name) VALUES ('b') RETURNING id`).Scan(&b); err != nil {
		t.Fatal(err)
	}
	create := func(tenant int64, name string, role adminauth.Role) adminauth.Token {
		t.Helper()
		tok, _, err := s.Create(ctx, tenant, name, role, nil, adminauth.Creator{Name: "test"})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	op := create(0, "root", adminauth.RoleOperator)
	create(a, "alice", adminauth.RoleAdmin)
	vera := create(a, "vera", adminauth.RoleViewer)
	bob := create(b, "bob", adminauth.RoleAdmin)

	names := func(tenant int64) string {
		t.Helper()
		toks, err := s.List(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tk := range toks {
			out = append(out, tk.Name+"@"+tk.TenantName)
		}
		return strings.Join(out, ",")
	}
	for tenant, want := range map[int64]string{0: "root@,alice@a,vera@a,bob@b", a: "alice@a,vera@a", b: "bob@b"} {
		if got := names(tenant); got != want {
			t.Errorf("List(%d) = %s, want %s", tenant, got, want)
		}
	}

	// Out of scope is not found, whether the token exists or not.
	for _, id := range []int64{bob.ID, op.ID, 999999} {
		if _, err := s.Revoke(ctx, a, id); !errors.Is(err, adminauth.ErrNotFound) {
			t.Errorf("Revoke(a, %d) = %v, want ErrNotFound", id, err)
		}
	}
	got, err := s.Revoke(ctx, a, vera.ID)
	if err != nil || got.RevokedAt == nil || got.Name != "vera" || got.TenantName != "a" {
		t.Fatalf("Revoke(a, vera) = %+v, %v", got, err)
	}
	again, err := s.Revoke(ctx, 0, vera.ID)
	if err != nil || !again.RevokedAt.Equal(*got.RevokedAt) {
		t.Fatalf("revoking twice moved revoked_at: %v then %v (%v)", got.RevokedAt, again.RevokedAt, err)
	}
	if _, err := s.Revoke(ctx, 0, bob.ID); err != nil {
		t.Fatal(err)
	}
	toks, err := s.List(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range toks {
		if revoked := tk.ID == vera.ID || tk.ID == bob.ID; revoked != (tk.RevokedAt != nil) {
			t.Errorf("%s: revoked at %v", tk.Name, tk.RevokedAt)
		}
	}
}
