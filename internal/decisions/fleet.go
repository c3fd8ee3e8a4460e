package decisions

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The operator's fleet-wide reads. Each goes tenant by tenant through the
// tenants table (every index of decisions and of the counts starts with
// tenant_id, so that they stay distributable by tenant): a deleted
// tenant's decisions, which wait for retention, are not shown.

// ListAll returns the decisions of every tenant (or of the tenant named,
// when tenant is not empty) that match f, newest first. Each tenant gives
// at most a page of its newest matches, by List's own query (one batch,
// one round trip); the page is the newest of those. One query over a
// lateral join of the tenants was planned for any tenant id and took
// 900 ms for a filter List answers in 5 (BenchmarkDecisionsPage).
func (s *Store) ListAll(ctx context.Context, tenant string, f Filter) (Page, error) {
	limit, where, args, err := f.conditions([]any{int64(0)})
	if err != nil {
		return Page{}, err
	}
	where = append([]string{"tenant_id = $1"}, where...)
	args = append(args, limit+1)
	sql := fmt.Sprintf(`SELECT %s FROM decisions WHERE %s ORDER BY time DESC, id DESC LIMIT $%d`,
		recordColumns, strings.Join(where, " AND "), len(args))
	var items []Record
	err = s.readTx(ctx, pgx.RepeatableRead, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id FROM tenants WHERE $1 = '' OR name = $1`, tenant)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil || len(ids) == 0 {
			return err
		}
		var b pgx.Batch
		for _, id := range ids {
			a := slices.Clone(args)
			a[0] = id
			b.Queue(sql, a...)
		}
		br := tx.SendBatch(ctx, &b)
		for range ids {
			rows, err := br.Query()
			if err != nil {
				_ = br.Close()
				return err
			}
			recs, err := pgx.CollectRows(rows, scanRecord)
			if err != nil {
				_ = br.Close()
				return err
			}
			items = append(items, recs...)
		}
		return br.Close()
	})
	if err != nil {
		return Page{}, err
	}
	// Newest first as PostgreSQL orders (time, id): canonical UUID text
	// sorts as the bytes do.
	slices.SortFunc(items, func(a, b Record) int {
		return cmp.Or(b.Time.Compare(a.Time), strings.Compare(b.ID, a.ID))
	})
	if items == nil {
		items = []Record{}
	}
	return pageOf(items[:min(len(items), limit+1)], limit), nil
}

// TenantCounts are one tenant's decisions of a StatsAll window.
type TenantCounts struct {
	Tenant   string
	Total    int64
	Verdicts map[string]int64
	DeniedBy map[string]int64
}

// StatsAll counts the decisions of every tenant (or of the tenant named):
// the buckets sum the tenants', and each tenant's counts of the whole
// window come apart, in the order of the tenants' names, every tenant
// there, counted or not.
func (s *Store) StatsAll(ctx context.Context, tenant string, q StatsQuery) (Stats, []TenantCounts, error) {
	if err := q.normalize(time.Now()); err != nil {
		return Stats{}, nil, err
	}
	out := emptyStats(q)
	index := map[time.Time]*Bucket{}
	for i := range out.Buckets {
		index[out.Buckets[i].Start] = &out.Buckets[i]
	}
	var tenants []TenantCounts
	err := s.readTx(ctx, pgx.RepeatableRead, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT name FROM tenants WHERE $1 = '' OR name = $1 ORDER BY name`, tenant)
		if err != nil {
			return err
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, n := range names {
			tenants = append(tenants, TenantCounts{Tenant: n, Verdicts: map[string]int64{}, DeniedBy: map[string]int64{}})
		}
		rows, err = tx.Query(ctx, `SELECT t.name, x.* FROM tenants t CROSS JOIN LATERAL (`+countsSQL("tenant_id = t.id")+`) AS x
			WHERE $1 = '' OR t.name = $1`, countsArgs(tenant, q)...)
		if err != nil {
			return err
		}
		var name, cluster, verdict, policy string
		var start time.Time
		var n int64
		_, err = pgx.ForEachRow(rows, []any{&name, &start, &cluster, &verdict, &policy, &n}, func() error {
			b := index[start.UTC()]
			i, found := slices.BinarySearchFunc(tenants, name, func(c TenantCounts, name string) int { return strings.Compare(c.Tenant, name) })
			if b == nil || !found {
				return nil
			}
			b.add(cluster, verdict, policy, n)
			t := &tenants[i]
			if policy != "" {
				t.DeniedBy[policy] += n
			} else {
				t.Verdicts[verdict] += n
				t.Total += n
			}
			return nil
		})
		return err
	})
	return out, tenants, err
}
