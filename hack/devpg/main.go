// Command devpg runs the local PostgreSQL that `make run` uses when
// PORTCULLIS_DATABASE_URL is not set. Its data lives under the state
// directory and survives restarts.
//
//	devpg start --dir .portcullis/postgres   # prints the database URL
//	devpg stop  --dir .portcullis/postgres
package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portcullis-dev/portcullis/internal/pglocal"
)

const dbName = "portcullis"

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "start" && os.Args[1] != "stop") {
		fmt.Fprintln(os.Stderr, "usage: devpg start|stop --dir DIR")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("devpg", flag.ExitOnError)
	dir := fs.String("dir", ".portcullis/postgres", "directory holding the cluster")
	_ = fs.Parse(os.Args[2:])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url, err := run(ctx, os.Args[1], *dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "devpg: %v\n", err)
		os.Exit(1)
	}
	if url != "" {
		fmt.Println(url)
	}
}

func run(ctx context.Context, verb, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	bin, err := pglocal.FindBinDir()
	if err != nil {
		return "", err
	}
	c, err := pglocal.New(bin, filepath.Join(abs, "data"), socketDir(abs))
	if err != nil {
		return "", err
	}
	c.LogFile = filepath.Join(abs, "server.log")
	if verb == "stop" {
		if !c.Running(ctx) {
			return "", nil
		}
		return "", c.Stop(ctx)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", err
	}
	if !c.Initialized() {
		fmt.Fprintf(os.Stderr, "devpg: creating a PostgreSQL cluster in %s\n", c.DataDir)
		if err := c.Init(ctx); err != nil {
			return "", err
		}
	}
	if !c.Running(ctx) {
		if err := ensureLogWritable(c); err != nil {
			return "", err
		}
		if err := c.Start(ctx); err != nil {
			return "", err
		}
	}
	if err := ensureDatabase(ctx, c); err != nil {
		return "", err
	}
	return c.URL(dbName), nil
}

// socketDir keeps the socket path under the 107-byte limit of Unix sockets.
func socketDir(abs string) string {
	d := filepath.Join(abs, "run")
	if len(d) < 80 {
		return d
	}
	return fmt.Sprintf("/tmp/portcullis-%x", sha256.Sum256([]byte(abs)))[:30]
}

func ensureLogWritable(c *pglocal.Cluster) error {
	f, err := os.OpenFile(c.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		return err
	}
	f.Close()
	// The server (possibly the postgres user) appends to it.
	return os.Chmod(c.LogFile, 0o666)
}

func ensureDatabase(ctx context.Context, c *pglocal.Cluster) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", dbName).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+dbName)
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
