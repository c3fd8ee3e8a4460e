package adminauth_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/uisession"
)

func TestAuthenticateID(t *testing.T) {
	ctx := context.Background()
	s := adminauth.NewStore(pgtest.Pool(t))
	if _, err := s.Bootstrap(ctx, "root"); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Minute)
	live, _, err := s.Create(ctx, 0, "live", adminauth.RoleOperator, nil, adminauth.Creator{})
	if err != nil {
		t.Fatal(err)
	}
	revoked, _, _ := s.Create(ctx, 0, "revoked", adminauth.RoleOperator, nil, adminauth.Creator{})
	if _, err := s.Revoke(ctx, 0, revoked.ID); err != nil {
		t.Fatal(err)
	}
	expired, _, _ := s.Create(ctx, 0, "expired", adminauth.RoleOperator, &past, adminauth.Creator{})

	if p, err := s.AuthenticateID(ctx, live.ID); err != nil || p.Name != "live" || p.TokenID != live.ID {
		t.Errorf("AuthenticateID(live) = %+v, %v", p, err)
	}
	for name, id := range map[string]int64{"revoked": revoked.ID, "expired": expired.ID, "unknown": 1 << 40} {
		if _, err := s.AuthenticateID(ctx, id); !errors.Is(err, adminauth.ErrUnauthenticated) {
			t.Errorf("AuthenticateID(%s) = %v, want ErrUnauthenticated", name, err)
		}
	}
}

func TestSessionFollowsItsToken(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := adminauth.NewStore(pool)
	tok, _, err := s.Create(ctx, 0, "ops", adminauth.RoleOperator, nil, adminauth.Creator{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	session := func(name string) uisession.Session {
		h := sha256.Sum256([]byte(name))
		return uisession.Session{IDHash: h[:], TokenID: tok.ID, Role: "operator", ExpiresAt: now.Add(time.Hour), IdleExpiresAt: now.Add(time.Hour)}
	}

	// A session must describe its token as it is.
	for name, bad := range map[string]uisession.Session{
		"another role":  {Role: "admin"},
		"a tenant":      {Tenant: "a"},
		"unknown token": {TokenID: 1 << 40},
		"the sync role": {Role: "sync"},
	} {
		ss := session(name)
		if bad.Role != "" {
			ss.Role = bad.Role
		}
		if bad.Tenant != "" {
			ss.Tenant = bad.Tenant
		}
		if bad.TokenID != 0 {
			ss.TokenID = bad.TokenID
		}
		if err := s.CreateSession(ctx, ss, now); !errors.Is(err, uisession.ErrNotFound) {
			t.Errorf("CreateSession with %s = %v, want ErrNotFound", name, err)
		}
	}

	ss := session("good")
	if err := s.CreateSession(ctx, ss, now); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindSession(ctx, ss.IDHash, now, now.Add(time.Hour))
	if err != nil || got.TokenID != tok.ID || got.Name != "ops" || got.Role != "operator" || got.Tenant != "" {
		t.Fatalf("FindSession = %+v, %v", got, err)
	}
	// A token whose role no longer matches does not carry the session,
	// and the session is gone after.
	if _, err := pool.Exec(ctx, `UPDATE ui_sessions SET role = 'viewer'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FindSession(ctx, ss.IDHash, now, now.Add(time.Hour)); !errors.Is(err, uisession.ErrNotFound) {
		t.Errorf("FindSession with a changed role = %v, want ErrNotFound", err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM ui_sessions`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d sessions left after a refused one, %v", n, err)
	}
}
