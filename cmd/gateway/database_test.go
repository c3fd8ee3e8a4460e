package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// With --database-direct-url apart from --database-url (the pool through
// PgBouncer), the LISTEN connection goes direct and the pool describes
// its statements rather than preparing them by name.
func TestDirectDatabaseURL(t *testing.T) {
	dbURL := pgtest.URL(t)
	cfg := testConfig(t, dbURL)
	cfg.DatabaseDirectURL = dbURL + "&application_name=portcullis-direct"
	m := startMain(t, cfg)

	if m.DirectPool == m.Pool {
		t.Fatal("one pool for both URLs")
	}
	if mode := m.Pool.Config().ConnConfig.DefaultQueryExecMode; mode != pgx.QueryExecModeCacheDescribe {
		t.Errorf("pool exec mode %v, want cache describe", mode)
	}
	ctx := context.Background()
	testutil.Eventually(t, 10*time.Second, "a LISTEN session on the direct URL", func() bool {
		var n int
		err := m.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = 'portcullis-direct' AND query LIKE 'LISTEN %'`).Scan(&n)
		return err == nil && n == 1
	})
	var viaPool int
	if err := m.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE application_name <> 'portcullis-direct' AND query LIKE 'LISTEN %'`).Scan(&viaPool); err != nil || viaPool != 0 {
		t.Errorf("%d LISTEN sessions on the pool's URL (err %v), want 0", viaPool, err)
	}
	code, body, _ := get(t, &http.Client{Timeout: 5 * time.Second}, m.MetricsURL()+"/metrics")
	if code != http.StatusOK || !strings.Contains(body, `portcullis_db_pool_max_connections{pool="direct"} 2`) ||
		!strings.Contains(body, `portcullis_db_pool_max_connections{pool="main"}`) {
		t.Errorf("/metrics = %d without both pools' statistics", code)
	}
}
