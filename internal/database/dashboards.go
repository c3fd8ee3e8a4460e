package database

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DashboardsRole is the read-only role of Grafana's PostgreSQL datasource
// (docs/observability.md). Migration 00012 creates it when the migrating
// user may create roles; otherwise an administrator does.
const DashboardsRole = "portcullis_dashboards"

// dashboardReads is everything the dashboards' role may read in the
// schema, and nothing else: GrantDashboards makes the role's privileges
// exactly this list, so a table the dashboards need is one line here.
// Columns, when given, are the only ones readable: the tenant and cluster
// dropdowns need ids and names, not the rest of those rows. Never list
// credentials, admin_tokens, ui_sessions or the policy tables: they hold
// secrets or tenants' policies.
var dashboardReads = []struct {
	table   string
	columns []string // nil: the whole table
}{
	{"decisions", nil}, // the partitions need no grant: reads go through the parent
	{"decision_counts_minute", nil},
	{"decision_counts_hour", nil},
	{"tenants", []string{"id", "name", "display_name"}},
	{"clusters", []string{"id", "tenant_id", "name"}},
}

// RoleExists reports whether a role of that name exists. Roles belong to
// the whole PostgreSQL cluster, not to the database.
func RoleExists(ctx context.Context, pool *pgxpool.Pool, role string) (bool, error) {
	var ok bool
	err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_roles WHERE rolname = $1)`, role).Scan(&ok)
	return ok, err
}

// GrantDashboards gives role read access to dashboardReads and takes every
// other privilege it has on the schema's tables away, in one transaction.
// It does nothing when the role does not exist, and it is idempotent:
// Migrate runs it after every migration run, so that a role created after
// the database was migrated (migration 00012 ran once and, goose having
// recorded it, never runs again) gets its grants from the next migrate.
func GrantDashboards(ctx context.Context, pool *pgxpool.Pool, role string) (granted bool, err error) {
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// Two migrators granting at once fail with "tuple concurrently
		// updated": take the migrations' lock.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLockID)); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_roles WHERE rolname = $1)`, role).Scan(&granted); err != nil || !granted {
			return err
		}
		var schema string
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			return err
		}
		r, s := pgx.Identifier{role}.Sanitize(), pgx.Identifier{schema}.Sanitize()
		// Only the tables the role has privileges on: a REVOKE rewrites the
		// table's catalog row even when there is nothing to revoke, which
		// over every partition risks colliding with a gateway attaching one.
		rows, err := tx.Query(ctx, `
			SELECT c.oid::regclass::text FROM pg_class c, pg_roles r
			WHERE r.rolname = $1 AND c.relnamespace = current_schema()::regnamespace
			  AND (EXISTS (SELECT FROM aclexplode(c.relacl) p WHERE p.grantee = r.oid)
			       OR EXISTS (SELECT FROM pg_attribute a, aclexplode(a.attacl) p
			                  WHERE a.attrelid = c.oid AND p.grantee = r.oid))`, role)
		if err != nil {
			return err
		}
		held, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		stmts := []string{fmt.Sprintf("GRANT USAGE ON SCHEMA %s TO %s", s, r)}
		if len(held) > 0 {
			// Table privileges revoked take the column privileges with them.
			stmts = append(stmts, fmt.Sprintf("REVOKE ALL ON %s FROM %s", strings.Join(held, ", "), r))
		}
		for _, g := range dashboardReads {
			cols := ""
			if g.columns != nil {
				quoted := make([]string, len(g.columns))
				for i, c := range g.columns {
					quoted[i] = pgx.Identifier{c}.Sanitize()
				}
				cols = " (" + strings.Join(quoted, ", ") + ")"
			}
			stmts = append(stmts, fmt.Sprintf("GRANT SELECT%s ON %s TO %s", cols, pgx.Identifier{g.table}.Sanitize(), r))
		}
		for _, sql := range stmts {
			if _, err := tx.Exec(ctx, sql); err != nil {
				return fmt.Errorf("%s: %w", sql, err)
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("grant the dashboards' role %s its reads: %w", role, err)
	}
	return granted, nil
}
