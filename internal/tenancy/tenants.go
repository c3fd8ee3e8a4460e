package tenancy

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgnotify"
)

const tenantCols = `id, name, display_name, created_at, updated_at`

func scanTenant(row pgx.Row) (Tenant, error) {
	var t Tenant
	err := row.Scan(&t.ID, &t.Name, &t.DisplayName, &t.CreatedAt, &t.UpdatedAt)
	return t, err
}

// CreateTenant creates a tenant. name must be a DNS label; it is unique.
func (s *Store) CreateTenant(ctx context.Context, name, displayName string) (Tenant, error) {
	if err := validateName("tenant", name); err != nil {
		return Tenant{}, err
	}
	t, err := scanTenant(s.pool.QueryRow(ctx,
		`INSERT INTO tenants (name, display_name) VALUES ($1, $2) RETURNING `+tenantCols, name, displayName))
	if isUniqueViolation(err) {
		return Tenant{}, fault.Errorf(fault.AlreadyExists, "tenant %q already exists", name)
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("create tenant: %w", err)
	}
	return t, nil
}

// FindTenant returns the tenant with id.
func (s *Store) FindTenant(ctx context.Context, tenantID int64) (Tenant, error) {
	return s.findTenant(ctx, "id", tenantID)
}

// FindTenantByName resolves a tenant's name (as in a URL) to the tenant.
func (s *Store) FindTenantByName(ctx context.Context, name string) (Tenant, error) {
	return s.findTenant(ctx, "name", name)
}

// findTenant returns the tenant whose column (id or name, both unique) is
// value.
func (s *Store) findTenant(ctx context.Context, column string, value any) (Tenant, error) {
	t, err := scanTenant(s.pool.QueryRow(ctx, `SELECT `+tenantCols+` FROM tenants WHERE `+column+` = $1`, value))
	if errors.Is(err, pgx.ErrNoRows) {
		return Tenant{}, notFound("tenant")
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("find tenant: %w", err)
	}
	return t, nil
}

// ListAllTenants returns every tenant, ordered by name. It is for platform
// operators.
func (s *Store) ListAllTenants(ctx context.Context) ([]Tenant, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+tenantCols+` FROM tenants ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	ts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Tenant, error) { return scanTenant(r) })
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	return ts, nil
}

// UpdateTenantDisplayName changes a tenant's display name.
func (s *Store) UpdateTenantDisplayName(ctx context.Context, tenantID int64, displayName string) (Tenant, error) {
	t, err := scanTenant(s.pool.QueryRow(ctx,
		`UPDATE tenants SET display_name = $2, updated_at = now() WHERE id = $1 RETURNING `+tenantCols,
		tenantID, displayName))
	if errors.Is(err, pgx.ErrNoRows) {
		return Tenant{}, notFound("tenant")
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("update tenant: %w", err)
	}
	return t, nil
}

// DeleteTenant deletes a tenant with its clusters and credentials, and tells
// every replica to forget its credentials at once.
func (s *Store) DeleteTenant(ctx context.Context, tenantID int64) error {
	return s.withTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM tenants WHERE id = $1`, tenantID)
		if err != nil {
			return fmt.Errorf("delete tenant: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return notFound("tenant")
		}
		return pgnotify.Notify(ctx, tx, Channel, "tenant:"+strconv.FormatInt(tenantID, 10))
	})
}
