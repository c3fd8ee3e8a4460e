package database_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/portcullis-dev/portcullis/internal/database"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

func TestPoolCollector(t *testing.T) {
	ctx := context.Background()
	pool, err := database.Open(ctx, pgtest.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(database.NewPoolCollector("main", pool))

	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	want := `
# HELP portcullis_db_pool_acquired_connections Connections currently checked out of the pool.
# TYPE portcullis_db_pool_acquired_connections gauge
portcullis_db_pool_acquired_connections{pool="main"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "portcullis_db_pool_acquired_connections"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(database.NewPoolCollector("main", pool)); n != 13 {
		t.Fatalf("%d pool metrics, want 13", n)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}
