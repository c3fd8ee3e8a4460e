package policystore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// liveObjects reads the tenant's version and all its live objects in one
// repeatable-read transaction, so the two always agree.
func (s *Store) liveObjects(ctx context.Context, tenantID int64) (int64, []*unstructured.Unstructured, int, error) {
	var (
		version int64
		objs    []*unstructured.Unstructured
		size    int
	)
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT version FROM policy_heads WHERE tenant_id = $1`, tenantID).Scan(&version)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT object FROM policy_objects WHERE tenant_id = $1 AND NOT deleted
			ORDER BY api_group, kind, namespace, name`, tenantID)
		if err != nil {
			return err
		}
		var js []byte
		_, err = pgx.ForEachRow(rows, []any{&js}, func() error {
			size += len(js)
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(js); err != nil {
				return err
			}
			objs = append(objs, u)
			return nil
		})
		return err
	})
	return version, objs, size, err
}

// headVersionsAll returns the current policy version of each given tenant;
// tenants that never wrote a policy are absent (version 0).
func (s *Store) headVersionsAll(ctx context.Context, tenantIDs []int64) (map[int64]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT tenant_id, version FROM policy_heads WHERE tenant_id = ANY($1)`, tenantIDs)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]int64, len(tenantIDs))
	var t, v int64
	_, err = pgx.ForEachRow(rows, []any{&t, &v}, func() error { out[t] = v; return nil })
	return out, err
}

// touchServedAll records that the given tenants were served recently, at a
// five-minute grain so that replicas do not write on every resync.
func (s *Store) touchServedAll(ctx context.Context, tenantIDs []int64) error {
	if len(tenantIDs) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO policy_heads AS h (tenant_id, last_served_at)
		SELECT t.id, now() FROM tenants t WHERE t.id = ANY($1)
		ON CONFLICT (tenant_id) DO UPDATE SET last_served_at = now()
		WHERE h.last_served_at IS NULL OR h.last_served_at < now() - interval '5 minutes'`, tenantIDs)
	return err
}

// RecentTenantsAll returns up to limit tenants served within the window,
// most recent first: among the tenants named in only when it is not
// empty, and never those named in except (a deployment that answers for
// some tenants only; CacheConfig.Tenants).
func (s *Store) RecentTenantsAll(ctx context.Context, window time.Duration, limit int, only, except []string) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT h.tenant_id FROM policy_heads h JOIN tenants t ON t.id = h.tenant_id
		WHERE h.last_served_at > now() - make_interval(secs => $1)
		  AND (cardinality($3::text[]) = 0 OR t.name = ANY($3))
		  AND NOT (t.name = ANY($4))
		ORDER BY h.last_served_at DESC LIMIT $2`, window.Seconds(), limit, nonNil(only), nonNil(except))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// nonNil makes a nil list an empty SQL array rather than NULL, which
// ANY and cardinality would turn into NULL.
func nonNil(names []string) []string {
	if names == nil {
		return []string{}
	}
	return names
}
