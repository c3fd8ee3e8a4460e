package adminauth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/uisession"
)

// Finding 30.10: an unknown admin token or session id costs no database
// write. On connections where every transaction is read-only, PostgreSQL
// refuses any data-modifying statement, even one that would change no row,
// so the lookups of unknown credentials must be plain reads; a known one
// still records its use on a writable connection.
func TestUnknownCredentialsCostNoWrite(t *testing.T) {
	ctx := context.Background()
	u := pgtest.URL(t)
	open := func(readOnly bool) *adminauth.Store {
		cfg, err := pgxpool.ParseConfig(u)
		if err != nil {
			t.Fatal(err)
		}
		if readOnly {
			cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return adminauth.NewStore(pool)
	}
	rw, ro := open(false), open(true)
	root, err := rw.Bootstrap(ctx, "root")
	if err != nil {
		t.Fatal(err)
	}

	if _, err := ro.Authenticate(ctx, adminauth.NewToken()); !errors.Is(err, adminauth.ErrUnauthenticated) {
		t.Errorf("unknown token on a read-only connection: %v, want ErrUnauthenticated", err)
	}
	if _, err := ro.AuthenticateID(ctx, 1<<40); !errors.Is(err, adminauth.ErrUnauthenticated) {
		t.Errorf("unknown token id on a read-only connection: %v, want ErrUnauthenticated", err)
	}
	now := time.Now()
	if _, err := ro.FindSession(ctx, adminauth.Hash("no such session"), now, now.Add(time.Hour)); !errors.Is(err, uisession.ErrNotFound) {
		t.Errorf("unknown session on a read-only connection: %v, want ErrNotFound", err)
	}

	// A known token and session still record their use.
	p, err := rw.Authenticate(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	toks, err := rw.List(ctx, 0)
	if err != nil || len(toks) != 1 || toks[0].LastUsedAt == nil {
		t.Fatalf("tokens after use: %+v, %v; want last_used_at set", toks, err)
	}
	id := adminauth.Hash("a session")
	if err := rw.CreateSession(ctx, uisession.Session{IDHash: id, TokenID: p.TokenID, Name: p.Name, Role: string(p.Role),
		ExpiresAt: now.Add(time.Hour), IdleExpiresAt: now.Add(time.Minute)}, now); err != nil {
		t.Fatal(err)
	}
	ss, err := rw.FindSession(ctx, id, now, now.Add(30*time.Minute))
	if err != nil || ss.TokenID != p.TokenID || ss.Role != "operator" || !ss.IdleExpiresAt.Equal(now.Add(30*time.Minute)) {
		t.Fatalf("FindSession = %+v, %v", ss, err)
	}
	if ss, err := rw.FindSession(ctx, id, now, now.Add(30*time.Minute)); err != nil || !ss.IdleExpiresAt.Round(time.Millisecond).Equal(now.Add(30*time.Minute).Round(time.Millisecond)) {
		t.Fatalf("the idle expiry was not stored: %+v, %v", ss, err)
	}
	// An expired session is deleted when presented.
	later := now.Add(2 * time.Hour)
	if _, err := rw.FindSession(ctx, id, later, later.Add(time.Hour)); !errors.Is(err, uisession.ErrNotFound) {
		t.Fatalf("expired session: %v", err)
	}
	if _, err := rw.FindSession(ctx, id, now, now.Add(30*time.Minute)); !errors.Is(err, uisession.ErrNotFound) {
		t.Fatalf("an expired session was not deleted when presented: %v", err)
	}
}
