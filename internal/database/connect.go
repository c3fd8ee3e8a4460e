package database

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Config is how a gateway reaches PostgreSQL.
type Config struct {
	// URL is the pool's: PostgreSQL itself, or a PgBouncer in front of it
	// in transaction mode.
	URL string
	// DirectURL reaches PostgreSQL without transaction pooling, for what
	// needs a session of its own: the LISTEN connection of
	// internal/pgnotify, and partition maintenance, which holds a
	// session-level advisory lock around ALTER TABLE ... DETACH
	// CONCURRENTLY (a statement no transaction may hold). Empty or equal
	// to URL: the pool serves both.
	DirectURL string
	// Tracer, when set, traces the pool's queries and COPYs.
	Tracer pgx.QueryTracer
}

// Split reports whether the pool and the direct connections go different
// ways (the pool through PgBouncer).
func (c Config) Split() bool { return c.DirectURL != "" && c.DirectURL != c.URL }

// Pools are the gateway's connections to PostgreSQL.
type Pools struct {
	// Pool serves every query and transaction.
	Pool *pgxpool.Pool
	// Direct serves sessions: LISTEN and partition maintenance. It is
	// Pool itself unless Config.DirectURL names another way.
	Direct *pgxpool.Pool
	// ExecMode is Pool's query exec mode: the one its URL names with
	// pgx's default_query_exec_mode parameter; else, when the direct URL
	// is set apart (the pool goes through PgBouncer in transaction mode),
	// cache_describe; else pgx's default, cache_statement.
	//
	// cache_statement keeps named prepared statements on each server
	// connection. Behind PgBouncer in transaction mode, a client's next
	// transaction may run on another server connection, where its
	// statement does not exist (or another client's of the same name
	// does); PgBouncer tracks protocol-level prepared statements only from
	// 1.21 (max_prepared_statements), and Debian 12 ships 1.18.
	// cache_describe uses only the unnamed statement: the first execution
	// of a query on a client connection describes it in a round trip of
	// its own, and every execution parses, binds and runs it in one
	// message sequence, which PgBouncer keeps on one server connection.
	// The types being known, values are encoded as with cache_statement
	// (exec and simple_protocol send text guessed from Go types).
	ExecMode pgx.QueryExecMode
}

// directMaxConns bounds the direct pool unless its URL sets
// pool_max_conns: the listener takes one connection out of it for good
// (Hijack) and partition maintenance borrows one now and then.
const directMaxConns = 2

// OpenPools makes the pools of cfg. It does not connect: pgxpool connects
// on first use, so a gateway starts while its database is away.
func OpenPools(cfg Config) (*Pools, error) {
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("--database-url: %w", err)
	}
	if urlParam(cfg.URL, "default_query_exec_mode") == "" && cfg.Split() {
		pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
	pc.ConnConfig.Tracer = cfg.Tracer
	ps := &Pools{ExecMode: pc.ConnConfig.DefaultQueryExecMode}
	if ps.Pool, err = pgxpool.NewWithConfig(context.Background(), pc); err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	if !cfg.Split() {
		ps.Direct = ps.Pool
		return ps, nil
	}
	dc, err := pgxpool.ParseConfig(cfg.DirectURL)
	if err != nil {
		ps.Pool.Close()
		return nil, fmt.Errorf("--database-direct-url: %w", err)
	}
	if urlParam(cfg.DirectURL, "pool_max_conns") == "" {
		dc.MaxConns = directMaxConns
	}
	if ps.Direct, err = pgxpool.NewWithConfig(context.Background(), dc); err != nil {
		ps.Pool.Close()
		return nil, fmt.Errorf("database: %w", err)
	}
	return ps, nil
}

// Close closes both pools.
func (p *Pools) Close() {
	if p.Direct != p.Pool {
		p.Direct.Close()
	}
	p.Pool.Close()
}

// urlParam is the query parameter name of a postgres:// URL ("" when
// absent or when s is not a URL).
func urlParam(s, name string) string {
	if !strings.HasPrefix(s, "postgres://") && !strings.HasPrefix(s, "postgresql://") {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Query().Get(name)
}

// WaitCurrent waits for PostgreSQL, retrying with a backoff up to 5s until
// ctx ends, and refuses to go on if the schema is not current (an error
// wrapping ErrPending). It reads the schema version without a lock, so it
// may go through PgBouncer.
func WaitCurrent(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) error {
	backoff := 200 * time.Millisecond
	for {
		err := CheckCurrent(ctx, pool)
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrPending) {
			return err
		}
		logger.Warn("waiting for the database", "error", err, "retry_in", backoff.String())
		select {
		case <-ctx.Done():
			return fmt.Errorf("database not reached before shutdown: %w", err)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}
