package database_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

// The schema must stay distributable by tenant with Citus without a
// change (docs/production.md, "Decisions at fleet scale"). Every table is
// one of three kinds there:
//
//   - distributed by tenant_id: every table with a tenant_id column that
//     is not listed below, so a table added later (a decisions rollup, say)
//     is checked as soon as it exists;
//   - a reference table, copied to every node (referenceTables);
//   - a table left on the coordinator alone (localTables).
//
// The rule for a distributed table, partitions included: tenant_id is NOT
// NULL (Citus refuses a row without its distribution column); the table
// has a primary key; tenant_id is the first key column of the primary key,
// of every unique constraint and of every index. Citus itself requires only
// that each primary key and unique constraint include the distribution
// column, since it enforces them shard by shard; tenant_id first is this
// project's stronger rule, so that a tenant's rows are one range of every
// index, on one node or many. A foreign key from a distributed table goes
// to a reference table, or to another distributed table through tenant_id
// (co-located tables join and cascade within one shard); no foreign key
// goes from a reference table to a distributed one. Both are Citus's rules.

// referenceTables are small tables that Citus copies to every node, so
// that distributed tables can keep their foreign keys to them. The reason
// each cannot be distributed is given.
var referenceTables = map[string]string{
	"tenants": "the tenants themselves: tenant_id refers to tenants.id",
	"clusters": "small; its key is the global id, which credentials and sync " +
		"tokens refer to",
	"credentials": "authentication finds a credential by the hash of its secret " +
		"before it knows the tenant, so those hashes are unique across tenants",
	"admin_tokens": "found by the hash of the token before the tenant is known; " +
		"operator tokens have no tenant (tenant_id NULL)",
	"policy_heads": "one row per tenant, as tenants; the warm-up reads the " +
		"tenants served last across all tenants (policy_heads_last_served)",
}

// localTables stay on the coordinator: nothing distributed refers to them.
var localTables = map[string]string{
	"admin_audit_log": "operator calls have no tenant (tenant_id NULL); one row " +
		"per admin write, which does not grow with webhook traffic",
	"goose_db_version": "the migration tool's own bookkeeping",
	"ui_sessions": "found by the hash of the cookie before the tenant is known; " +
		"operator sessions have no tenant (tenant_id NULL); one row per signed-in browser",
}

// exemptIndexes break the rule for a reason stated here; each is a debt
// with the condition that pays it. None is left: the last,
// decisions_tenant_cluster_time, went when the Grafana tenant dashboard
// began to select decisions by tenant_id (migration 00016).
var exemptIndexes = map[string]string{}

func TestSchemaIsDistributableByTenant(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	// Partitions are tables of their own in the catalog: make some.
	p := &decisions.Partitions{Pool: pool, Retention: 48 * time.Hour, Ahead: 1}
	if err := p.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	got, err := distributionViolations(ctx, conn.Conn())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range got {
		t.Error(v)
	}
	// The check covers what it claims to: the partitions and a table of
	// each kind.
	kinds, err := tableKinds(ctx, conn.Conn())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"decisions", "policy_versions", "cluster_namespaces"} {
		if kinds[name] != "distributed" {
			t.Errorf("%s is %q, want distributed", name, kinds[name])
		}
	}
	// A listed name that no longer exists would exempt its successor
	// unseen.
	for _, list := range []map[string]string{referenceTables, localTables, exemptIndexes} {
		for name := range list {
			var exists bool
			if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", name).Scan(&exists); err != nil {
				t.Fatal(err)
			}
			if !exists {
				t.Errorf("%s is listed in distribution_test.go but does not exist", name)
			}
		}
	}
	partitions := 0
	for name, k := range kinds {
		if strings.HasPrefix(name, "decisions_p") && k == "distributed" {
			partitions++
		}
	}
	if partitions < 2 {
		t.Errorf("%d decisions partitions checked, want at least 2", partitions)
	}
}

// Each way of breaking the rule is caught, and named.
func TestDistributionViolationsAreFound(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, sql := range []string{
		`CREATE TABLE bad_key (tenant_id bigint NOT NULL, id bigint PRIMARY KEY)`,
		`CREATE TABLE bad_nullable (tenant_id bigint, id bigint, UNIQUE (tenant_id, id))`,
		`CREATE TABLE bad_nokey (tenant_id bigint NOT NULL, id bigint)`,
		`CREATE TABLE bad_index (tenant_id bigint NOT NULL, id bigint, v text,
			PRIMARY KEY (tenant_id, id), UNIQUE (v, tenant_id))`,
		`CREATE INDEX bad_index_v ON bad_index (v)`,
		`ALTER TABLE bad_key ADD UNIQUE (tenant_id, id)`,
		`CREATE TABLE bad_fk (tenant_id bigint NOT NULL, id bigint, other bigint,
			PRIMARY KEY (tenant_id, id), FOREIGN KEY (tenant_id, other) REFERENCES bad_key (tenant_id, id))`,
		`CREATE TABLE bad_fk_key (tenant_id bigint NOT NULL, id bigint, PRIMARY KEY (tenant_id, id))`,
		`ALTER TABLE bad_fk_key ADD FOREIGN KEY (id) REFERENCES bad_key (id)`,
		`CREATE TABLE bad_local (tenant_id bigint NOT NULL, id bigint, PRIMARY KEY (tenant_id, id),
			FOREIGN KEY (id) REFERENCES admin_audit_log (id))`,
		`ALTER TABLE clusters ADD COLUMN bad bigint, ADD FOREIGN KEY (tenant_id, bad) REFERENCES bad_nullable (tenant_id, id)`,
		`CREATE TABLE unclassified (id bigint PRIMARY KEY)`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	got, err := distributionViolations(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"bad_key: index bad_key_pkey starts with id, not tenant_id",
		"bad_nullable: tenant_id may be NULL",
		"bad_nokey: no primary key",
		"bad_index: index bad_index_v_tenant_id_key starts with v, not tenant_id",
		"bad_index: index bad_index_v starts with v, not tenant_id",
		"bad_fk_key: foreign key bad_fk_key_id_fkey to distributed table bad_key does not join on tenant_id",
		"bad_local: foreign key bad_local_id_fkey to admin_audit_log, which is neither distributed nor a reference table",
		"clusters: foreign key clusters_tenant_id_bad_fkey from a reference table to distributed table bad_nullable",
		"unclassified: has no tenant_id and is not listed as a reference or local table",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("not reported: %s", want)
		}
	}
	// A foreign key through tenant_id between distributed tables is fine.
	for _, v := range got {
		if strings.HasPrefix(v, "bad_fk:") {
			t.Errorf("reported, but allowed: %s", v)
		}
	}
}

// tableKinds classifies every table of the schema (partitions by their
// root): "distributed", "reference", "local" or "" (unclassified).
func tableKinds(ctx context.Context, conn *pgx.Conn) (map[string]string, error) {
	rows, err := conn.Query(ctx, `
		SELECT c.relname, r.relname,
		       EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped)
		FROM pg_class c
		JOIN pg_class r ON r.oid = coalesce(pg_partition_root(c.oid), c.oid)
		WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')`)
	if err != nil {
		return nil, err
	}
	kinds := map[string]string{}
	var name, root string
	var hasTenant bool
	_, err = pgx.ForEachRow(rows, []any{&name, &root, &hasTenant}, func() error {
		switch {
		case referenceTables[root] != "":
			kinds[name] = "reference"
		case localTables[root] != "":
			kinds[name] = "local"
		case hasTenant:
			kinds[name] = "distributed"
		default:
			kinds[name] = ""
		}
		return nil
	})
	return kinds, err
}

// distributionViolations lists, one line each, where the schema breaks the
// rule above.
func distributionViolations(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	kinds, err := tableKinds(ctx, conn)
	if err != nil {
		return nil, err
	}
	var out []string
	report := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for name, kind := range kinds {
		if kind == "" {
			report("%s: has no tenant_id and is not listed as a reference or local table", name)
		}
	}

	// tenant_id NOT NULL, and a primary key.
	rows, err := conn.Query(ctx, `
		SELECT c.relname, a.attnotnull,
		       EXISTS (SELECT FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)
		FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id'
		WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')`)
	if err != nil {
		return nil, err
	}
	var table string
	var notNull, hasKey bool
	_, err = pgx.ForEachRow(rows, []any{&table, &notNull, &hasKey}, func() error {
		if kinds[table] != "distributed" {
			return nil
		}
		if !notNull {
			report("%s: tenant_id may be NULL", table)
		}
		if !hasKey {
			report("%s: no primary key", table)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}

	// Every index, those of primary keys and unique constraints included:
	// its first key column. A partition's index is exempt when the
	// parent's index it belongs to is.
	rows, err = conn.Query(ctx, `
		SELECT c.relname, x.relname, coalesce(a.attname, '(an expression)'),
		       (SELECT relname FROM pg_class WHERE oid = coalesce(pg_partition_root(x.oid), x.oid))
		FROM pg_index i
		JOIN pg_class c ON c.oid = i.indrelid
		JOIN pg_class x ON x.oid = i.indexrelid
		LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
		WHERE c.relnamespace = current_schema()::regnamespace`)
	if err != nil {
		return nil, err
	}
	var index, first, rootIndex string
	_, err = pgx.ForEachRow(rows, []any{&table, &index, &first, &rootIndex}, func() error {
		if kinds[table] == "distributed" && first != "tenant_id" && exemptIndexes[rootIndex] == "" {
			report("%s: index %s starts with %s, not tenant_id", table, index, first)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}

	// Foreign keys: whether tenant_id is joined to tenant_id.
	rows, err = conn.Query(ctx, `
		SELECT c.relname, f.relname, k.conname,
		       EXISTS (SELECT FROM unnest(k.conkey, k.confkey) AS p(from_col, to_col)
		               JOIN pg_attribute fa ON fa.attrelid = k.conrelid AND fa.attnum = p.from_col
		               JOIN pg_attribute ta ON ta.attrelid = k.confrelid AND ta.attnum = p.to_col
		               WHERE fa.attname = 'tenant_id' AND ta.attname = 'tenant_id')
		FROM pg_constraint k
		JOIN pg_class c ON c.oid = k.conrelid
		JOIN pg_class f ON f.oid = k.confrelid
		WHERE k.contype = 'f' AND c.relnamespace = current_schema()::regnamespace`)
	if err != nil {
		return nil, err
	}
	var target, fk string
	var onTenant bool
	_, err = pgx.ForEachRow(rows, []any{&table, &target, &fk, &onTenant}, func() error {
		from, to := kinds[table], kinds[target]
		switch {
		case from == "distributed" && to == "distributed" && !onTenant:
			report("%s: foreign key %s to distributed table %s does not join on tenant_id", table, fk, target)
		case from == "distributed" && to != "distributed" && to != "reference":
			report("%s: foreign key %s to %s, which is neither distributed nor a reference table", table, fk, target)
		case from == "reference" && to == "distributed":
			report("%s: foreign key %s from a reference table to distributed table %s", table, fk, target)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}
