package pgnotify_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portcullis-dev/portcullis/internal/pgnotify"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestDeliversAndResyncsAfterReconnect(t *testing.T) {
	pool := pgtest.Pool(t)
	l := pgnotify.New(pool, nil)
	got := make(chan string, 10)
	connects := make(chan struct{}, 10)
	l.Subscribe("things_changed", func(p string) { got <- p })
	l.OnConnect(func() { connects <- struct{}{} })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = l.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	waitFor(t, connects, "first connect")
	if err := pgnotify.Notify(ctx, pool, "things_changed", "tenant-a"); err != nil {
		t.Fatal(err)
	}
	if p := waitFor(t, got, "notification"); p != "tenant-a" {
		t.Fatalf("payload = %q", p)
	}

	// A notification inside a rolled-back transaction is never delivered.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = pgnotify.Notify(ctx, tx, "things_changed", "rolled-back")
	_ = tx.Rollback(ctx)
	_ = pgnotify.Notify(ctx, pool, "things_changed", "after")
	if p := waitFor(t, got, "notification"); p != "after" {
		t.Fatalf("payload = %q, want the one after the rollback", p)
	}

	// After an outage the listener reconnects and tells subscribers to resync.
	pgtest.StopServer(t)
	pgtest.StartServer(t)
	waitFor(t, connects, "reconnect")
	if !l.Connected() {
		t.Fatal("Connected() = false after reconnect")
	}
}

func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(15 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// The listener tells subscribers at once when its connection drops, and
// reconnects within a second of the database's return however long it was
// away (its backoff is capped).
func TestDisconnectHookAndPromptReconnect(t *testing.T) {
	// The pool counts the listener's connection attempts.
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	cfg.BeforeConnect = func(context.Context, *pgx.ConnConfig) error { attempts.Add(1); return nil }
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	l := pgnotify.New(pool, nil)
	connects := make(chan struct{}, 100)
	disconnects := make(chan struct{}, 100)
	l.Subscribe("things_changed", func(string) {})
	l.OnConnect(func() { connects <- struct{}{} })
	l.OnDisconnect(func() { disconnects <- struct{}{} })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = l.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, connects, "first connect")

	pgtest.StopServer(t)
	waitFor(t, disconnects, "the disconnect hook")
	// Six failed attempts: without a cap the backoff would have doubled
	// from 100ms to 3.2s by now, and the reconnect below would come late.
	down := attempts.Load()
	testutil.Eventually(t, 0, "six failed reconnection attempts", func() bool { return attempts.Load()-down >= 6 })
	if n := len(disconnects); n != 0 {
		t.Fatalf("%d more disconnect hooks while never connected; want 0", n)
	}
	pgtest.StartServer(t)
	back := time.Now()
	waitFor(t, connects, "reconnect")
	if took := time.Since(back); took > time.Second {
		t.Fatalf("reconnected %v after the database returned; want within 1s", took)
	}
}

// With WaitFor, a (re)connect runs its hooks, and reports connected, only
// once the check passes (the gateway's pool behind PgBouncer answering);
// notifications sent meanwhile are still delivered.
func TestConnectWaitsForTheCheck(t *testing.T) {
	pool := pgtest.Pool(t)
	l := pgnotify.New(pool, nil)
	var checks atomic.Int32
	pass := make(chan struct{})
	l.WaitFor(func(context.Context) error {
		checks.Add(1)
		select {
		case <-pass:
			return nil
		default:
			return errors.New("the pool is not back yet")
		}
	})
	connects := make(chan int32, 10)
	got := make(chan string, 10)
	l.Subscribe("things_changed", func(p string) { got <- p })
	l.OnConnect(func() { connects <- checks.Load() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = l.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	testutil.Eventually(t, 10*time.Second, "three failed checks", func() bool { return checks.Load() >= 3 })
	if len(connects) != 0 || l.Connected() {
		t.Fatalf("hooks ran (%d) or Connected() = %t while the check fails", len(connects), l.Connected())
	}
	if err := pgnotify.Notify(ctx, pool, "things_changed", "meanwhile"); err != nil {
		t.Fatal(err)
	}
	close(pass)
	if n := waitFor(t, connects, "connect"); n < 4 {
		t.Fatalf("the hook ran after %d checks; want after the first that passed (at least the 4th)", n)
	}
	if !l.Connected() {
		t.Fatal("Connected() = false after the check passed")
	}
	if p := waitFor(t, got, "the notification sent while waiting"); p != "meanwhile" {
		t.Fatalf("payload %q", p)
	}
}
