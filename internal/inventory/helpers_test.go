package inventory

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var seq atomic.Int64

// insertTenant inserts a tenant row and returns its id.
func insertTenant(t testing.TB, pool *pgxpool.Pool) int64 {
	t.Helper()
	var id int64
	if err := pool.QueryRow(context.Background(), `INSERT INTO tenants (name) VALUES ($1) RETURNING id`,
		fmt.Sprintf("t%d", seq.Add(1))).Scan(&id); err != nil {
		t.Fatalf("insert tenant: %v", err)
	}
	return id
}

// insertCluster inserts a cluster row of the tenant and returns its id.
func insertCluster(t testing.TB, pool *pgxpool.Pool, tenantID int64) int64 {
	t.Helper()
	var id int64
	if err := pool.QueryRow(context.Background(), `INSERT INTO clusters (tenant_id, name) VALUES ($1, $2) RETURNING id`,
		tenantID, fmt.Sprintf("c%d", seq.Add(1))).Scan(&id); err != nil {
		t.Fatalf("insert cluster: %v", err)
	}
	return id
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
