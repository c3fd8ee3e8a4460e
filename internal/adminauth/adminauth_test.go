package adminauth_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

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
