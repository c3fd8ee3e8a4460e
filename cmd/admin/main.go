// Command admin manages a Portcullis gateway: database migrations, the
// first operator token, and (through the admin API) tenants, clusters,
// credentials and policies.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/database"
	"github.com/portcullis-dev/portcullis/internal/envflag"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// exitError carries a process exit code; 2 means a usage error.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }

func usageErr(format string, args ...any) error {
	return exitError{2, fmt.Errorf(format, args...)}
}

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error
}

func commands() []command {
	return []command{
		{"migrate", "apply pending database migrations (--database-url URL)", cmdMigrate},
		{"bootstrap", "create the first operator token and print it once (--database-url URL)", cmdBootstrap},
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, getenv)
		if err == nil {
			return 0
		}
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "admin %s: %v\n", c.name, err)
		var ee exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return 1
	}
	fmt.Fprintf(stderr, "admin: unknown command %q (run `admin help`)\n", args[0])
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: admin COMMAND [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun `admin COMMAND -h` for a command's flags.")
}

// newFlags returns a flag set whose errors come back as usage errors and
// whose -h prints to stdout.
func newFlags(name string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("admin "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: admin %s [flags]\n", name)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

func parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	err := envflag.Parse(fs, "PORTCULLIS_", args, getenv)
	if errors.Is(err, flag.ErrHelp) {
		fs.Usage()
		return err
	}
	if err != nil {
		return exitError{2, err}
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

func databaseFlag(fs *flag.FlagSet) *string {
	return fs.String("database-url", "", "PostgreSQL URL (or PORTCULLIS_DATABASE_URL)")
}

// openDB checks the URL and connects.
func openDB(ctx context.Context, u string) (*pgxpool.Pool, error) {
	if err := requireURL(u); err != nil {
		return nil, err
	}
	return database.Open(ctx, u)
}

func requireURL(u string) error {
	if u == "" {
		return usageErr("--database-url (PORTCULLIS_DATABASE_URL) is required")
	}
	if !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		return usageErr("--database-url must be a postgres:// URL")
	}
	return nil
}

func cmdMigrate(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	fs := newFlags("migrate", stdout)
	url := databaseFlag(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	pool, err := openDB(ctx, *url)
	if err != nil {
		return err
	}
	defer pool.Close()
	applied, err := database.Migrate(ctx, pool)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintln(stdout, "database schema is up to date")
		return nil
	}
	for _, v := range applied {
		fmt.Fprintf(stdout, "applied migration %05d\n", v)
	}
	return nil
}

func cmdBootstrap(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	fs := newFlags("bootstrap", stdout)
	url := databaseFlag(fs)
	name := fs.String("name", "bootstrap", "name recorded for the token")
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	pool, err := openDB(ctx, *url)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := database.CheckCurrent(ctx, pool); err != nil {
		return err
	}
	token, err := adminauth.NewStore(pool).Bootstrap(ctx, *name)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, token)
	return nil
}
