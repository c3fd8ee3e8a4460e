// Package database opens the PostgreSQL pool and applies or checks the
// embedded schema migrations.
package database

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/portcullis-dev/portcullis/migrations"
)

// Open connects a pool and checks that the server answers.
func Open(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("invalid database URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return pool, nil
}

// migrationLockID is the advisory lock that serialises concurrent migrators.
const migrationLockID = 0x706f7274 // "port"

func newProvider(db *sql.DB, logger *slog.Logger) (*goose.Provider, error) {
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID))
	if err != nil {
		return nil, err
	}
	opts := []goose.ProviderOption{goose.WithSessionLocker(locker)}
	if logger != nil {
		opts = append(opts, goose.WithVerbose(true), goose.WithLogger(gooseLogger{logger}))
	} else {
		opts = append(opts, goose.WithLogger(goose.NopLogger()))
	}
	return goose.NewProvider(goose.DialectPostgres, db, migrations.FS, opts...)
}

type gooseLogger struct{ l *slog.Logger }

func (g gooseLogger) Printf(format string, v ...any) { g.l.Info(fmt.Sprintf(format, v...)) }
func (g gooseLogger) Fatalf(format string, v ...any) { g.l.Error(fmt.Sprintf(format, v...)) }

// Migrate applies every pending migration under an advisory lock, so two
// migrators started together apply each file once, then grants the
// dashboards' role its reads if the role exists (GrantDashboards). It
// returns the versions it applied. The lock is a session's: pool must reach PostgreSQL
// directly, never through PgBouncer in transaction mode, where the lock
// would stay on one server connection and its unlock go to another
// (admin migrate documents it; the chart's migration Job uses the direct
// URL).
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]int64, error) {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := newProvider(db, nil)
	if err != nil {
		return nil, err
	}
	results, err := p.Up(ctx)
	var applied []int64
	for _, r := range results {
		applied = append(applied, r.Source.Version)
	}
	if err != nil {
		return applied, fmt.Errorf("migrate: %w", err)
	}
	if _, err := GrantDashboards(ctx, pool, DashboardsRole); err != nil {
		return applied, err
	}
	return applied, nil
}

// ErrPending means the schema is older than this binary expects.
var ErrPending = errors.New("database schema has pending migrations")

// CheckCurrent returns an error wrapping ErrPending, naming the command to
// run, when the database lacks migrations this binary knows about. It
// takes no lock, so it may go through PgBouncer in transaction mode;
// Migrate may not (see Migrate).
func CheckCurrent(ctx context.Context, pool *pgxpool.Pool) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := newProvider(db, nil)
	if err != nil {
		return err
	}
	has, err := p.HasPending(ctx)
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if has {
		// GetVersions, unlike GetDBVersion, takes no session advisory
		// lock: through PgBouncer in transaction mode, a session lock
		// stays on whichever server connection took it.
		cur, want, _ := p.GetVersions(ctx)
		return fmt.Errorf("%w (database at version %d, this binary needs %d): run `admin migrate --database-url URL` first", ErrPending, cur, want)
	}
	return nil
}
