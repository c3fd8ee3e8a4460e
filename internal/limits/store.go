// Package limits bounds what one tenant's webhook requests may take from a
// replica, so that one tenant's costly-but-legal policies or traffic never
// slow another's: concurrent evaluations, CEL cost per request and
// requests per second. Each has a gateway-wide default and a per-tenant
// override, stored in Postgres and pushed to every replica by
// notification. The same overrides hold the bounds of each of the
// tenant's clusters' inventory, which internal/inventory enforces.
package limits

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgnotify"
)

// Channel carries the id of a tenant whose overrides changed.
const Channel = "portcullis_tenant_limits"

// Limits are a tenant's limits on one replica. A zero field means "the
// default" in an override, and "no limit" in the effective limits.
type Limits struct {
	// ConcurrentEvaluations is how many of the tenant's requests evaluate
	// at once; the others wait their turn, briefly.
	ConcurrentEvaluations int
	// CELCostPerRequest bounds the CEL cost of one request summed over
	// all its bindings (the apiserver's own budgets bound each evaluation).
	CELCostPerRequest int64
	// RequestsPerSecond is the sustained rate of requests; bursts of one
	// second's worth pass.
	RequestsPerSecond float64
	// MaxNamespacesPerCluster and MaxCRDsPerCluster bound how many
	// namespaces (committed and provisional together) and CRDs one of the
	// tenant's clusters' inventory holds. The limiter does not use them:
	// internal/inventory reads the same columns of tenant_limits in every
	// write's transaction, over its own defaults (inventory.Bounds).
	MaxNamespacesPerCluster int
	MaxCRDsPerCluster       int
}

// Over lays the override's non-zero fields over l.
func (l Limits) Over(o Limits) Limits {
	if o.ConcurrentEvaluations > 0 {
		l.ConcurrentEvaluations = o.ConcurrentEvaluations
	}
	if o.CELCostPerRequest > 0 {
		l.CELCostPerRequest = o.CELCostPerRequest
	}
	if o.RequestsPerSecond > 0 {
		l.RequestsPerSecond = o.RequestsPerSecond
	}
	if o.MaxNamespacesPerCluster > 0 {
		l.MaxNamespacesPerCluster = o.MaxNamespacesPerCluster
	}
	if o.MaxCRDsPerCluster > 0 {
		l.MaxCRDsPerCluster = o.MaxCRDsPerCluster
	}
	return l
}

// Store keeps the tenants' overrides.
type Store struct{ pool *pgxpool.Pool }

// NewStore returns a store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Get returns the tenant's overrides (zero fields where it has none).
func (s *Store) Get(ctx context.Context, tenantID int64) (Limits, error) {
	var l Limits
	err := s.pool.QueryRow(ctx, `SELECT `+overrideColumns+` FROM tenant_limits WHERE tenant_id = $1`, tenantID).
		Scan(l.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return Limits{}, nil
	}
	return l, err
}

// Set replaces the tenant's overrides; zero fields go back to the
// defaults. Every replica is notified. A field out of its range (Check)
// is a 422 naming it.
func (s *Store) Set(ctx context.Context, tenantID int64, l Limits) error {
	if err := Check(l); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Each parameter typed as its column: an untyped NULLIF($3, 0)
		// took the type of the literal 0, a 32-bit integer, and a cost
		// past 2^31 failed to encode (a 500).
		_, err := tx.Exec(ctx, `INSERT INTO tenant_limits (tenant_id, concurrent_evaluations, cel_cost_per_request, requests_per_second,
			  max_namespaces_per_cluster, max_crds_per_cluster)
			VALUES ($1, NULLIF($2::integer, 0), NULLIF($3::bigint, 0), NULLIF($4::double precision, 0),
			  NULLIF($5::integer, 0), NULLIF($6::integer, 0))
			ON CONFLICT (tenant_id) DO UPDATE SET concurrent_evaluations = EXCLUDED.concurrent_evaluations,
			  cel_cost_per_request = EXCLUDED.cel_cost_per_request, requests_per_second = EXCLUDED.requests_per_second,
			  max_namespaces_per_cluster = EXCLUDED.max_namespaces_per_cluster, max_crds_per_cluster = EXCLUDED.max_crds_per_cluster,
			  updated_at = now()`,
			tenantID, int64(l.ConcurrentEvaluations), l.CELCostPerRequest, l.RequestsPerSecond,
			int64(l.MaxNamespacesPerCluster), int64(l.MaxCRDsPerCluster))
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23503" { // foreign_key_violation
			return fault.Errorf(fault.NotFound, "tenant %d not found", tenantID)
		}
		if err != nil {
			return err
		}
		return pgnotify.Notify(ctx, tx, Channel, strconv.FormatInt(tenantID, 10))
	})
}

// AllOverrides returns every tenant's overrides, by tenant id.
func (s *Store) AllOverrides(ctx context.Context) (map[int64]Limits, error) {
	rows, err := s.pool.Query(ctx, `SELECT tenant_id, `+overrideColumns+` FROM tenant_limits`)
	if err != nil {
		return nil, err
	}
	out := map[int64]Limits{}
	var (
		id int64
		l  Limits
	)
	_, err = pgx.ForEachRow(rows, append([]any{&id}, l.dest()...), func() error {
		out[id] = l
		return nil
	})
	return out, err
}

// overrideColumns are the overrides as Limits.dest scans them, NULL (the
// default) read as zero.
const overrideColumns = `coalesce(concurrent_evaluations, 0), coalesce(cel_cost_per_request, 0),
	coalesce(requests_per_second, 0), coalesce(max_namespaces_per_cluster, 0), coalesce(max_crds_per_cluster, 0)`

func (l *Limits) dest() []any {
	return []any{&l.ConcurrentEvaluations, &l.CELCostPerRequest, &l.RequestsPerSecond,
		&l.MaxNamespacesPerCluster, &l.MaxCRDsPerCluster}
}
