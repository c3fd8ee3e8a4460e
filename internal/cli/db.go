package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portcullis-dev/portcullis/internal/database"
	"github.com/portcullis-dev/portcullis/internal/envflag"
)

// The database commands run before any gateway does, so they talk to
// PostgreSQL directly; their flags also come from the environment
// (PORTCULLIS_DATABASE_URL), like the gateway's.
func (e *env) parseDBFlags(f *flags, args []string) error {
	err := envflag.Parse(f.FlagSet, "PORTCULLIS_", args, e.getenv)
	if errors.Is(err, flag.ErrHelp) {
		return err // Parse printed the usage
	}
	if err != nil {
		return exitError{exitUsage, err}
	}
	if f.NArg() > 0 {
		return usageErr("unexpected argument %q", f.Arg(0))
	}
	return nil
}

// dbURLs are the database commands' URLs. migrate holds a session-level
// advisory lock, which PgBouncer in transaction mode would leave on one
// server connection and release on another, and pgx's default prepared
// statements do not survive it either: both commands connect to
// --database-direct-url when it is set (the gateway's, when its
// --database-url goes through PgBouncer), else to --database-url.
type dbURLs struct{ url, direct *string }

func databaseFlags(f *flags) dbURLs {
	return dbURLs{
		url:    f.String("database-url", "", "PostgreSQL URL (or PORTCULLIS_DATABASE_URL)"),
		direct: f.String("database-direct-url", "", "PostgreSQL URL without transaction pooling, used instead of --database-url when set (or PORTCULLIS_DATABASE_DIRECT_URL)"),
	}
}

// open checks the URL it uses and connects.
func (d dbURLs) open(ctx context.Context) (*pgxpool.Pool, error) {
	u, name := *d.url, "--database-url"
	if *d.direct != "" {
		u, name = *d.direct, "--database-direct-url"
	}
	if u == "" {
		return nil, usageErr("--database-url (PORTCULLIS_DATABASE_URL) is required")
	}
	if !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		return nil, usageErr("%s must be a postgres:// URL", name)
	}
	return database.Open(ctx, u)
}

func cmdMigrate(e *env, args []string) error {
	f := e.newFlags("migrate")
	db := databaseFlags(f)
	if err := e.parseDBFlags(f, args); err != nil {
		return err
	}
	pool, err := db.open(e.ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	applied, err := database.Migrate(e.ctx, pool)
	if err != nil {
		return err
	}
	// Migrate granted the dashboards' role its reads if it exists; if it
	// does not, say how to get them, since nothing else will.
	if ok, err := database.RoleExists(e.ctx, pool, database.DashboardsRole); err != nil {
		return err
	} else if !ok {
		fmt.Fprintf(e.stderr, "Warning: role %s does not exist, so Grafana's PostgreSQL datasource has no read-only role: "+
			"have an administrator run CREATE ROLE %s NOLOGIN, then migrate again (docs/observability.md)\n",
			database.DashboardsRole, database.DashboardsRole)
	}
	if len(applied) == 0 {
		e.printf("database schema is up to date\n")
		return nil
	}
	for _, v := range applied {
		e.printf("applied migration %05d\n", v)
	}
	return nil
}

func cmdBootstrap(e *env, args []string) error {
	f := e.newFlags("bootstrap")
	db := databaseFlags(f)
	name := f.String("name", "bootstrap", "name recorded for the token")
	if err := e.parseDBFlags(f, args); err != nil {
		return err
	}
	pool, err := db.open(e.ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := database.CheckCurrent(e.ctx, pool); err != nil {
		return err
	}
	if e.bootstrap == nil {
		return errors.New("bootstrap: this build of the CLI cannot create tokens")
	}
	token, err := e.bootstrap(e.ctx, pool, *name)
	if err != nil {
		return err
	}
	e.printf("%s\n", token)
	return nil
}
