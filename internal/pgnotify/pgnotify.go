// Package pgnotify delivers PostgreSQL NOTIFY messages to in-process
// subscribers over one dedicated connection per process.
//
// Notifications sent while the connection is down are lost, so after every
// (re)connect the listener calls its OnConnect hooks: subscribers use them to
// resync whatever they cache. OnDisconnect hooks run as soon as a live
// connection is lost: from then on what subscribers cache is unverified.
package pgnotify

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Listener owns one connection that LISTENs on every subscribed channel.
type Listener struct {
	pool   *pgxpool.Pool
	logger *slog.Logger

	mu           sync.Mutex
	subs         map[string][]func(payload string)
	onConnect    []func()
	onDisconnect []func()
	waitFor      func(context.Context) error
	connected    bool
}

// maxBackoff caps the wait between reconnection attempts. It bounds how
// long after the database returns from an outage the listener (and so
// every cache that resyncs on connect) catches up: with 5s, a policy
// changed as the database returned took up to 5s to be enforced; with
// 500ms, up to 0.9s in a drill (docs/production.md), too close to its 1s
// target. An attempt against a database that is still down costs one
// refused connection.
const maxBackoff = 250 * time.Millisecond

// New returns a listener that takes its connection from pool.
func New(pool *pgxpool.Pool, logger *slog.Logger) *Listener {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Listener{pool: pool, logger: logger, subs: map[string][]func(string){}}
}

// Subscribe registers fn for channel. Call it before Run. fn runs on the
// listener's goroutine and must not block for long.
func (l *Listener) Subscribe(channel string, fn func(payload string)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.subs[channel] = append(l.subs[channel], fn)
}

// OnConnect registers fn to run after each successful (re)connect, once the
// channels are listened to. Call it before Run.
func (l *Listener) OnConnect(fn func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.onConnect = append(l.onConnect, fn)
}

// OnDisconnect registers fn to run each time a live connection is lost.
// Call it before Run.
func (l *Listener) OnDisconnect(fn func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.onDisconnect = append(l.onDisconnect, fn)
}

// WaitFor makes every (re)connect wait, once the channels are listened to
// and before the OnConnect hooks run, until check succeeds: retried every
// waitRetry, for at most waitMax (then the hooks run anyway, and the
// subscribers' own retries take over). The gateway passes its pool's
// Ping when the pool goes through PgBouncer: after an outage, this direct
// connection is back before PgBouncer tries PostgreSQL again (it waits
// server_login_retry after a failed login, failing queries meanwhile),
// and a resync that failed there waited for the subscriber's backoff,
// grown during the outage: 10s in drill 4 (docs/production.md). Call it
// before Run.
func (l *Listener) WaitFor(check func(context.Context) error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waitFor = check
}

// How a reconnect waits for WaitFor's check.
const (
	waitRetry = 50 * time.Millisecond
	waitMax   = 30 * time.Second
)

// Connected reports whether the listener currently holds a live connection.
func (l *Listener) Connected() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.connected
}

// Run listens until ctx ends, reconnecting with capped exponential backoff.
func (l *Listener) Run(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	var failures int
	for {
		err := l.session(ctx, func() { backoff, failures = 100*time.Millisecond, 0 })
		if l.setConnected(false) && ctx.Err() == nil {
			l.mu.Lock()
			hooks := append([]func(){}, l.onDisconnect...)
			l.mu.Unlock()
			for _, h := range hooks {
				h()
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		// Attempts are frequent (maxBackoff): warn when the connection is
		// lost, then about every 30s while it stays away.
		if failures%(int(30*time.Second/maxBackoff)) == 0 {
			l.logger.Warn("notification listener disconnected; retrying", "error", err,
				"backoff", backoff.String(), "failed_attempts", failures)
		}
		failures++
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// setConnected records v and reports whether it was connected before.
func (l *Listener) setConnected(v bool) (was bool) {
	l.mu.Lock()
	was, l.connected = l.connected, v
	l.mu.Unlock()
	return was
}

func (l *Listener) session(ctx context.Context, connected func()) error {
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// A LISTENing connection must not go back to the pool.
	raw := conn.Hijack()
	defer raw.Close(context.Background())

	l.mu.Lock()
	channels := make([]string, 0, len(l.subs))
	for ch := range l.subs {
		channels = append(channels, ch)
	}
	hooks := append([]func(){}, l.onConnect...)
	check := l.waitFor
	l.mu.Unlock()
	for _, ch := range channels {
		if _, err := raw.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return err
		}
	}
	if check != nil {
		l.await(ctx, check)
	}
	l.setConnected(true)
	connected()
	for _, h := range hooks {
		h()
	}
	for {
		n, err := raw.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		l.dispatch(n)
	}
}

// await retries check until it succeeds, ctx ends or waitMax passes.
// Notifications arriving meanwhile wait in the connection's socket.
func (l *Listener) await(ctx context.Context, check func(context.Context) error) {
	deadline := time.Now().Add(waitMax)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		err := check(cctx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return
		}
		if time.Now().After(deadline) {
			l.logger.Warn("notification listener connected, but the pool still fails; resyncing anyway", "error", err)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(waitRetry):
		}
	}
}

func (l *Listener) dispatch(n *pgconn.Notification) {
	l.mu.Lock()
	fns := l.subs[n.Channel]
	l.mu.Unlock()
	for _, fn := range fns {
		fn(n.Payload)
	}
}

// Execer is satisfied by a pool, a connection and a transaction.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Notify sends payload on channel. Inside a transaction it is delivered at
// commit, and not at all on rollback.
func Notify(ctx context.Context, db Execer, channel, payload string) error {
	if channel == "" {
		return errors.New("pgnotify: empty channel")
	}
	_, err := db.Exec(ctx, "SELECT pg_notify($1, $2)", channel, payload)
	return err
}
