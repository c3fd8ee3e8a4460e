package database_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portcullis-dev/portcullis/internal/database"
	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

// The dashboards' role reads decisions and nothing else.
func TestDashboardsRoleReadsDecisionsOnly(t *testing.T) {
	ctx := context.Background()
	pool, err := database.Open(ctx, pgtest.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := database.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string]bool{"decisions": true, "credentials": false, "admin_tokens": false, "policy_objects": false, "tenants": false} {
		var can bool
		err := pool.QueryRow(ctx, `SELECT has_table_privilege('portcullis_dashboards', $1, 'SELECT')`, table).Scan(&can)
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		if can != want {
			t.Errorf("portcullis_dashboards may SELECT %s: %v, want %v", table, can, want)
		}
	}
	var writes bool
	if err := pool.QueryRow(ctx, `SELECT has_table_privilege('portcullis_dashboards', 'decisions', 'INSERT,UPDATE,DELETE')`).Scan(&writes); err != nil || writes {
		t.Fatalf("the dashboards' role may write decisions (%v)", err)
	}
	checkReadOnly(t, pool, database.DashboardsRole)
}

// secretTables hold credentials, tokens, sessions, tenants' policies or
// who did what: the dashboards' role must never read them, whatever is
// added to its list.
var secretTables = []string{"credentials", "admin_tokens", "ui_sessions", "admin_audit_log",
	"policy_heads", "policy_objects", "policy_versions", "goose_db_version"}

// checkReadOnly checks, from the catalog, every table of the schema
// (partitions included): role reads what GrantDashboards lists, none of
// secretTables, and writes nothing.
func checkReadOnly(t *testing.T, pool *pgxpool.Pool, role string) {
	t.Helper()
	ctx := context.Background()
	listed := database.DashboardReads()
	for _, name := range secretTables {
		if _, ok := listed[name]; ok {
			t.Errorf("the dashboards' role is granted %s", name)
		}
	}
	// Partitions are tables of their own in the catalog: make some.
	p := &decisions.Partitions{Pool: pool, Retention: 48 * time.Hour, Ahead: 1}
	if err := p.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `
		SELECT c.relname, a.attname,
		       has_column_privilege($1, c.oid, a.attnum, 'SELECT'),
		       has_column_privilege($1, c.oid, a.attnum, 'INSERT,UPDATE,REFERENCES'),
		       has_table_privilege($1, c.oid, 'INSERT,UPDATE,DELETE,TRUNCATE,REFERENCES,TRIGGER'),
		       coalesce(pg_partition_root(c.oid), c.oid) <> c.oid
		FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
		ORDER BY 1, 2`, role)
	if err != nil {
		t.Fatal(err)
	}
	var table, column string
	var reads, writesColumn, writesTable, partition bool
	tables := map[string]bool{}
	_, err = pgx.ForEachRow(rows, []any{&table, &column, &reads, &writesColumn, &writesTable, &partition}, func() error {
		tables[table] = true
		columns, want := listed[table]
		if columns != nil {
			want = slices.Contains(columns, column)
		}
		// A partition is read through its parent, which checks the grant.
		if reads != want && !(partition && !reads) {
			t.Errorf("%s may read %s.%s: %v, want %v", role, table, column, reads, want)
		}
		if writesColumn || writesTable {
			t.Errorf("%s may write %s.%s", role, table, column)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append([]string{"decisions", "tenants", "clusters"}, secretTables...) {
		if !tables[name] {
			t.Errorf("table %s not checked", name)
		}
	}
}

// A role created after the database was migrated gets its grants from the
// next migrate, though migration 00012 never runs again: docs/observability.md
// tells administrators of managed databases to do exactly that.
func TestMigrateGrantsDashboardsRoleCreatedLater(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	// The template was migrated with the role in place; take its grants
	// away, as if it had not existed then.
	if _, err := pool.Exec(ctx, `REVOKE ALL ON ALL TABLES IN SCHEMA public FROM portcullis_dashboards;
		REVOKE USAGE ON SCHEMA public FROM portcullis_dashboards`); err != nil {
		t.Fatal(err)
	}
	if asRole(t, pool, database.DashboardsRole, "SELECT count(*) FROM decisions") == nil {
		t.Fatal("the role reads decisions without grants")
	}
	applied, err := database.Migrate(ctx, pool)
	if err != nil || len(applied) != 0 {
		t.Fatalf("Migrate = %v, %v; want nothing to apply", applied, err)
	}
	if err := asRole(t, pool, database.DashboardsRole, "SELECT count(*) FROM decisions"); err != nil {
		t.Fatalf("after migrate: %v", err)
	}
	checkReadOnly(t, pool, database.DashboardsRole)
}

// GrantDashboards makes the role's privileges exactly its list, and
// reports a role that does not exist.
func TestGrantDashboards(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	role := pgtest.Role(t, pool)
	r := pgx.Identifier{role}.Sanitize()
	if granted, err := database.GrantDashboards(ctx, pool, role+"_absent"); err != nil || granted {
		t.Fatalf("GrantDashboards(absent role) = %v, %v; want false, nil", granted, err)
	}
	// Privileges the role must not keep.
	if _, err := pool.Exec(ctx, "GRANT INSERT ON decisions TO "+r+"; GRANT SELECT ON credentials, ui_sessions TO "+r+
		"; GRANT SELECT, UPDATE ON tenants TO "+r); err != nil {
		t.Fatal(err)
	}
	for range 2 { // idempotent
		if granted, err := database.GrantDashboards(ctx, pool, role); err != nil || !granted {
			t.Fatalf("GrantDashboards = %v, %v; want true, nil", granted, err)
		}
	}
	checkReadOnly(t, pool, role)
	// What the catalog says, PostgreSQL enforces.
	for _, tt := range []struct{ sql, denied string }{
		{"SELECT count(*) FROM decisions", ""},
		{"SELECT id, name, display_name FROM tenants", ""},
		{"SELECT id, tenant_id, name FROM clusters", ""},
		{"SELECT * FROM tenants", "permission denied for table tenants"},
		{"SELECT labels FROM clusters", "permission denied for table clusters"},
		{"SELECT token_hash FROM credentials", "permission denied for table credentials"},
		{"SELECT token_hash FROM admin_tokens", "permission denied for table admin_tokens"},
		{"SELECT count(*) FROM ui_sessions", "permission denied for table ui_sessions"},
		{"SELECT count(*) FROM policy_versions", "permission denied for table policy_versions"},
		{"DELETE FROM decisions", "permission denied for table decisions"},
		{"UPDATE tenants SET name = 'x'", "permission denied for table tenants"},
		{"INSERT INTO tenants (name) VALUES ('x')", "permission denied for table tenants"},
		{"CREATE TABLE mine (id int)", "permission denied for schema public"},
	} {
		err := asRole(t, pool, role, tt.sql)
		if tt.denied == "" && err != nil {
			t.Errorf("%s: %v", tt.sql, err)
		}
		if tt.denied != "" && (err == nil || !strings.Contains(err.Error(), tt.denied)) {
			t.Errorf("%s: error %v, want %q", tt.sql, err, tt.denied)
		}
	}
}

// asRole runs sql as role, in a transaction it rolls back.
func asRole(t *testing.T, pool *pgxpool.Pool, role, sql string) error {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+pgx.Identifier{role}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(ctx, sql)
	return err
}
