// Package pgtest gives integration tests a real PostgreSQL database.
//
// A test binary that uses it calls Main from TestMain. The first test that
// asks for a database starts one throwaway server for the whole binary (Unix
// socket only, fsync off) and migrates a template database once; every test
// then gets its own database cloned from that template, so tests never see
// each other's rows.
//
// PORTCULLIS_TEST_DATABASE_URL points the tests at an existing server
// instead; the role in it needs CREATEDB. No server is started then.
package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portcullis-dev/portcullis/internal/database"
	"github.com/portcullis-dev/portcullis/internal/pglocal"
)

// EnvURL names the variable that overrides the throwaway server.
const EnvURL = "PORTCULLIS_TEST_DATABASE_URL"

var (
	mu       sync.Mutex
	started  bool
	startErr error
	cluster  *pglocal.Cluster
	tmpDir   string
	adminURL string // a URL to the maintenance database "postgres"
	template string
	seq      atomic.Int64
)

// Main runs the tests and then stops the server, if one was started.
func Main(m *testing.M) {
	code := m.Run()
	mu.Lock()
	if cluster != nil {
		_ = cluster.Stop(context.Background())
	}
	if tmpDir != "" {
		_ = os.RemoveAll(tmpDir)
	}
	if template != "" && os.Getenv(EnvURL) != "" {
		dropDatabase(adminURL, template)
	}
	mu.Unlock()
	os.Exit(code)
}

func start() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if u := os.Getenv(EnvURL); u != "" {
		parsed, err := url.Parse(u)
		if err != nil {
			return fmt.Errorf("%s: %w", EnvURL, err)
		}
		parsed.Path = "/postgres"
		adminURL = parsed.String()
		template = fmt.Sprintf("pct_tmpl_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
	} else {
		bin, err := pglocal.FindBinDir()
		if err != nil {
			return err
		}
		tmpDir, err = os.MkdirTemp("", "pgtest-")
		if err != nil {
			return err
		}
		if err := os.Chmod(tmpDir, 0o755); err != nil {
			return err
		}
		c, err := pglocal.New(bin, filepath.Join(tmpDir, "data"), filepath.Join(tmpDir, "sock"))
		if err != nil {
			return err
		}
		c.Fast = true
		if err := c.Init(ctx); err != nil {
			return err
		}
		if err := c.StartChild(ctx); err != nil {
			return err
		}
		cluster = c
		adminURL = c.URL("postgres")
		template = "pct_template"
	}
	if err := exec(ctx, adminURL, "CREATE DATABASE "+pgx.Identifier{template}.Sanitize()); err != nil {
		return err
	}
	pool, err := database.Open(ctx, withDB(adminURL, template))
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := database.Migrate(ctx, pool); err != nil {
		return fmt.Errorf("migrate template: %w", err)
	}
	return nil
}

func ensureStarted(t testing.TB) {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if !started {
		started = true
		startErr = start()
	}
	if startErr != nil {
		t.Fatalf("pgtest: %v", startErr)
	}
}

// URL creates a fresh, migrated database for this test and returns its URL.
// The database is dropped when the test ends.
func URL(t testing.TB) string {
	t.Helper()
	ensureStarted(t)
	name := fmt.Sprintf("pct_%d_%d", os.Getpid(), seq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Cloning needs the template to have no sessions; serialise clones.
	mu.Lock()
	err := exec(ctx, adminURL, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s",
		pgx.Identifier{name}.Sanitize(), pgx.Identifier{template}.Sanitize()))
	mu.Unlock()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() { dropDatabase(adminURL, name) })
	return withDB(adminURL, name)
}

// Pool returns a pool on a fresh database of its own, closed when the test
// ends.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	u := URL(t)
	pool, err := database.Open(context.Background(), u)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// EmptyURL creates a fresh database with no schema at all, for tests of the
// migrations themselves.
func EmptyURL(t testing.TB) string {
	t.Helper()
	ensureStarted(t)
	name := fmt.Sprintf("pct_%d_%d", os.Getpid(), seq.Add(1))
	if err := exec(context.Background(), adminURL, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() { dropDatabase(adminURL, name) })
	return withDB(adminURL, name)
}

// StopServer stops the throwaway server, to test behaviour while the
// database is unreachable. StartServer brings it back with its data. Both
// fail the test under PORTCULLIS_TEST_DATABASE_URL, which they cannot control.
func StopServer(t testing.TB) {
	t.Helper()
	ensureStarted(t)
	mu.Lock()
	defer mu.Unlock()
	if cluster == nil {
		t.Fatalf("pgtest: cannot stop a server given by %s", EnvURL)
	}
	if err := cluster.Stop(context.Background()); err != nil {
		t.Fatalf("pgtest: stop: %v", err)
	}
}

// StartServer restarts a server stopped by StopServer.
func StartServer(t testing.TB) {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if cluster == nil {
		t.Fatalf("pgtest: cannot start a server given by %s", EnvURL)
	}
	if err := cluster.StartChild(context.Background()); err != nil {
		t.Fatalf("pgtest: start: %v", err)
	}
}

func withDB(u, db string) string {
	parsed, _ := url.Parse(u)
	parsed.Path = "/" + db
	return parsed.String()
}

func exec(ctx context.Context, u, sql string) error {
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

func dropDatabase(adminURL, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := exec(ctx, adminURL, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	if err != nil && !strings.Contains(err.Error(), "does not exist") {
		fmt.Fprintf(os.Stderr, "pgtest: drop %s: %v\n", name, err)
	}
}

var rowSeq atomic.Int64

// InsertTenant inserts a tenant row with a fresh name and returns its id,
// for tests of stores that only need one to exist.
func InsertTenant(t testing.TB, pool *pgxpool.Pool) int64 {
	t.Helper()
	var id int64
	if err := pool.QueryRow(context.Background(), `INSERT INTO tenants (name) VALUES ($1) RETURNING id`,
		fmt.Sprintf("t%d", rowSeq.Add(1))).Scan(&id); err != nil {
		t.Fatalf("insert tenant: %v", err)
	}
	return id
}

// InsertCluster inserts a cluster row of the tenant with a fresh name and
// returns its id.
func InsertCluster(t testing.TB, pool *pgxpool.Pool, tenantID int64) int64 {
	t.Helper()
	var id int64
	if err := pool.QueryRow(context.Background(), `INSERT INTO clusters (tenant_id, name) VALUES ($1, $2) RETURNING id`,
		tenantID, fmt.Sprintf("c%d", rowSeq.Add(1))).Scan(&id); err != nil {
		t.Fatalf("insert cluster: %v", err)
	}
	return id
}

// Role creates a role (NOLOGIN, no privileges) with a fresh name and
// returns the name, for tests of grants. Roles belong to the whole server,
// so the name is unique to this process; the role is dropped, with the
// privileges it holds in pool's database, when the test ends.
func Role(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	name := fmt.Sprintf("pct_role_%d_%d", os.Getpid(), rowSeq.Add(1))
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := pool.Exec(context.Background(), "CREATE ROLE "+ident+" NOLOGIN"); err != nil {
		t.Fatalf("pgtest: create role: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if _, err := pool.Exec(ctx, "DROP OWNED BY "+ident); err != nil {
			t.Errorf("pgtest: drop the privileges of role %s: %v", name, err)
		}
		if _, err := pool.Exec(ctx, "DROP ROLE "+ident); err != nil {
			t.Errorf("pgtest: drop role %s: %v", name, err)
		}
	})
	return name
}
