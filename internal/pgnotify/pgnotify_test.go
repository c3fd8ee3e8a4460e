package pgnotify_test

import (
	"context"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/pgnotify"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
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
	pool := pgtest.Pool(t)
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
	// Failed attempts double the backoff: 100ms, 200ms, ... 3.2s by now
	// without a cap.
	time.Sleep(6 * time.Second)
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
