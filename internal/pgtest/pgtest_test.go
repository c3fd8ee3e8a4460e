package pgtest_test

import (
	"context"
	"os"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Two tests' databases never see each other's rows, and each starts migrated.
func TestDatabasesAreIsolated(t *testing.T) {
	ctx := context.Background()
	a, b := pgtest.Pool(t), pgtest.Pool(t)
	if _, err := a.Exec(ctx, `INSERT INTO admin_tokens (name, role, token_hash) VALUES ('x', 'operator', decode(repeat('ab', 32), 'hex'))`); err != nil {
		t.Fatalf("insert into a: %v", err)
	}
	var na, nb int
	if err := a.QueryRow(ctx, `SELECT count(*) FROM admin_tokens`).Scan(&na); err != nil {
		t.Fatal(err)
	}
	if err := b.QueryRow(ctx, `SELECT count(*) FROM admin_tokens`).Scan(&nb); err != nil {
		t.Fatal(err)
	}
	if na != 1 || nb != 0 {
		t.Fatalf("rows: a=%d b=%d, want 1 and 0", na, nb)
	}
	var dbA, dbB string
	_ = a.QueryRow(ctx, `SELECT current_database()`).Scan(&dbA)
	_ = b.QueryRow(ctx, `SELECT current_database()`).Scan(&dbB)
	if dbA == dbB {
		t.Fatalf("both pools use database %q", dbA)
	}
}

func TestServerIsFastAndSocketOnly(t *testing.T) {
	if os.Getenv(pgtest.EnvURL) != "" {
		t.Skip("the server is given by " + pgtest.EnvURL + ", not started by pgtest")
	}
	pool := pgtest.Pool(t)
	ctx := context.Background()
	for setting, want := range map[string]string{"fsync": "off", "listen_addresses": ""} {
		var got string
		if err := pool.QueryRow(ctx, "SELECT current_setting($1)", setting).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s = %q, want %q", setting, got, want)
		}
	}
}
