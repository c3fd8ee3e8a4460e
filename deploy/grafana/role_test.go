package grafana_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portcullis-dev/portcullis/deploy/grafana"
	"github.com/portcullis-dev/portcullis/internal/database"
	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

// Every SQL query of the dashboards runs, as Grafana runs it, as a role
// that has exactly the grants `admin migrate` gives the dashboards' role:
// a role created after the database was migrated, then granted by
// database.GrantDashboards. The variables are resolved in order from the
// role's own answers, as Grafana resolves them, so a dropdown the role
// may not read fails here rather than in an SRE's Grafana.
func TestSQLRunsAsDashboardsRole(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	if err := (&decisions.Partitions{Pool: pool, Retention: 48 * time.Hour}).Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	acme := insertTenant(t, pool, "acme", "prod", "staging")
	globex := insertTenant(t, pool, "globex", "prod")
	now := time.Now()
	insertDecision(t, pool, acme, "acme", "prod", "denied", now.Add(-5*time.Minute))
	insertDecision(t, pool, acme, "acme", "staging", "allowed", now.Add(-4*time.Minute))
	insertDecision(t, pool, globex, "globex", "prod", "denied", now.Add(-3*time.Minute))
	// A deleted tenant's decisions outlive it, and its name may be taken
	// again: the dashboard selects by tenant_id, so they are not acme's.
	insertDecision(t, pool, 999999, "acme", "prod", "denied", now.Add(-2*time.Minute))

	role := pgtest.Role(t, pool)
	if granted, err := database.GrantDashboards(ctx, pool, role); err != nil || !granted {
		t.Fatalf("GrantDashboards = %v, %v", granted, err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+pgx.Identifier{role}.Sanitize()); err != nil {
		t.Fatal(err)
	}

	qs, err := grafana.Queries()
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string][]string{}
	var panels int
	for _, q := range qs {
		if q.RawSQL == "" {
			continue
		}
		sql := expand(q.RawSQL, vars)
		if strings.Contains(sql, "$") {
			t.Fatalf("%s: %s: a Grafana macro or variable this test does not know: %s", q.Dashboard, q.Where, sql)
		}
		rows, err := tx.Query(ctx, sql)
		if err != nil {
			t.Fatalf("%s: %s: %v\n%s", q.Dashboard, q.Where, err, sql)
		}
		got, err := pgx.CollectRows(rows, pgx.RowToMap)
		if err != nil {
			t.Fatalf("%s: %s: %v\n%s", q.Dashboard, q.Where, err, sql)
		}
		switch q.Where {
		case "variable tenant":
			// Grafana shows __text and substitutes __value.
			var names []string
			for _, r := range got {
				names = append(names, fmt.Sprint(r["__text"]))
				if r["__text"] == "acme" {
					vars["tenant"] = []string{fmt.Sprint(r["__value"])}
				}
			}
			if !slices.Equal(names, []string{"acme", "globex"}) {
				t.Fatalf("tenant variable: %q, want acme and globex", names)
			}
			if vars["tenant"][0] != fmt.Sprint(acme) {
				t.Fatalf("tenant variable: acme's value %q, want its id %d", vars["tenant"], acme)
			}
		case "variable cluster":
			for _, r := range got {
				vars["cluster"] = append(vars["cluster"], fmt.Sprint(r["name"]))
			}
			if !slices.Equal(vars["cluster"], []string{"prod", "staging"}) {
				t.Fatalf("cluster variable: %q, want acme's clusters", vars["cluster"])
			}
		case "Latest denials":
			if len(got) != 1 || got[0]["cluster"] != "prod" {
				t.Errorf("latest denials: %v, want acme's one denial in prod", got)
			}
		}
		if !strings.HasPrefix(q.Where, "variable ") {
			panels++
		}
	}
	if len(vars["tenant"]) == 0 || len(vars["cluster"]) == 0 {
		t.Fatalf("variables resolved: %q", vars)
	}
	if panels < 8 {
		t.Fatalf("only %d SQL panels ran", panels)
	}
}

// insertTenant inserts a tenant with its clusters and returns its id.
func insertTenant(t *testing.T, pool *pgxpool.Pool, name string, clusters ...string) int64 {
	t.Helper()
	ctx := context.Background()
	var id int64
	if err := pool.QueryRow(ctx, `INSERT INTO tenants (name) VALUES ($1) RETURNING id`, name).Scan(&id); err != nil {
		t.Fatal(err)
	}
	for _, c := range clusters {
		if _, err := pool.Exec(ctx, `INSERT INTO clusters (tenant_id, name) VALUES ($1, $2)`, id, c); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

// insertDecision stores one decision of a Pod's creation, denied by the
// policy "no-latest" when verdict is denied.
func insertDecision(t *testing.T, pool *pgxpool.Pool, tenantID int64, tenant, cluster, verdict string, at time.Time) {
	t.Helper()
	deniedBy, code := []string{}, 0
	if verdict == "denied" {
		deniedBy, code = []string{"no-latest"}, 403
	}
	_, err := pool.Exec(context.Background(), `
		INSERT INTO decisions (id, time, tenant_id, tenant, cluster_id, cluster, uid, operation, api_group,
			api_version, resource, subresource, kind, namespace, name, user_name, user_groups, dry_run,
			verdict, http_status, code, reason, message, warnings, audit_annotations, bindings, policies,
			denied_by, failure_policy_applied, timed_out, latency_ms, instance, snapshot_version)
		VALUES ($1, $2, $3, $4, 1, $5, 'uid', 'CREATE', '', 'v1', 'pods', '', 'Pod', 'default', 'web',
			'alice', '{}', false, $6, 200, $7, '', '', '{}', '{}', '[]', '{no-latest}', $8, false, false,
			1.5, 'test', 1)`,
		uuid.Must(uuid.NewV7()), at, tenantID, tenant, cluster, verdict, code, deniedBy)
	if err != nil {
		t.Fatal(err)
	}
}
