package tenancy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgnotify"
)

const clusterCols = `id, tenant_id, name, labels, created_at, updated_at`

func scanCluster(row pgx.Row) (Cluster, error) {
	var c Cluster
	var labels []byte
	if err := row.Scan(&c.ID, &c.TenantID, &c.Name, &labels, &c.CreatedAt, &c.UpdatedAt); err != nil {
		return c, err
	}
	if err := json.Unmarshal(labels, &c.Labels); err != nil {
		return c, fmt.Errorf("cluster labels: %w", err)
	}
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	return c, nil
}

func labelsJSON(labels map[string]string) []byte {
	if labels == nil {
		labels = map[string]string{}
	}
	b, _ := json.Marshal(labels)
	return b
}

func validateLabels(labels map[string]string) error {
	for k, v := range labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return invalid(nil, "invalid label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return invalid(nil, "invalid value for label %q: %s", k, strings.Join(errs, "; "))
		}
	}
	return nil
}

// CreateCluster creates a cluster of the tenant. name is a DNS label, unique
// within the tenant; labels follow Kubernetes label syntax.
func (s *Store) CreateCluster(ctx context.Context, tenantID int64, name string, labels map[string]string) (Cluster, error) {
	if err := validateName("cluster", name); err != nil {
		return Cluster{}, err
	}
	if err := validateLabels(labels); err != nil {
		return Cluster{}, err
	}
	var c Cluster
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var err error
		c, err = scanCluster(tx.QueryRow(ctx,
			`INSERT INTO clusters (tenant_id, name, labels)
			 SELECT id, $2, $3 FROM tenants WHERE id = $1
			 RETURNING `+clusterCols, tenantID, name, labelsJSON(labels)))
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("tenant")
		}
		if isUniqueViolation(err) {
			return fault.Errorf(fault.AlreadyExists, "cluster %q already exists", name)
		}
		if err != nil {
			return fmt.Errorf("create cluster: %w", err)
		}
		return nil
	})
	return c, err
}

// FindCluster returns the tenant's cluster with id.
func (s *Store) FindCluster(ctx context.Context, tenantID, clusterID int64) (Cluster, error) {
	return s.findCluster(ctx, tenantID, "id", clusterID)
}

// FindClusterByName returns the tenant's cluster called name.
func (s *Store) FindClusterByName(ctx context.Context, tenantID int64, name string) (Cluster, error) {
	return s.findCluster(ctx, tenantID, "name", name)
}

// findCluster returns the tenant's cluster whose column (id or name, both
// unique within the tenant) is value.
func (s *Store) findCluster(ctx context.Context, tenantID int64, column string, value any) (Cluster, error) {
	c, err := scanCluster(s.pool.QueryRow(ctx,
		`SELECT `+clusterCols+` FROM clusters WHERE tenant_id = $1 AND `+column+` = $2`, tenantID, value))
	if errors.Is(err, pgx.ErrNoRows) {
		return Cluster{}, notFound("cluster")
	}
	if err != nil {
		return Cluster{}, fmt.Errorf("find cluster: %w", err)
	}
	return c, nil
}

// ListClusters returns the tenant's clusters, ordered by name.
func (s *Store) ListClusters(ctx context.Context, tenantID int64) ([]Cluster, error) {
	rows, err := s.pool.Query(ctx,
		`SELECT `+clusterCols+` FROM clusters WHERE tenant_id = $1 ORDER BY name`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("list clusters: %w", err)
	}
	cs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Cluster, error) { return scanCluster(r) })
	if err != nil {
		return nil, fmt.Errorf("list clusters: %w", err)
	}
	return cs, nil
}

// SetClusterLabels replaces a cluster's labels.
func (s *Store) SetClusterLabels(ctx context.Context, tenantID, clusterID int64, labels map[string]string) (Cluster, error) {
	if err := validateLabels(labels); err != nil {
		return Cluster{}, err
	}
	var c Cluster
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var err error
		c, err = scanCluster(tx.QueryRow(ctx,
			`UPDATE clusters SET labels = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2
			 RETURNING `+clusterCols, tenantID, clusterID, labelsJSON(labels)))
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("cluster")
		}
		if err != nil {
			return fmt.Errorf("set cluster labels: %w", err)
		}
		return pgnotify.Notify(ctx, tx, Channel, "changed")
	})
	return c, err
}

// DeleteCluster deletes a cluster and its credentials, and tells every
// replica to forget those credentials at once.
func (s *Store) DeleteCluster(ctx context.Context, tenantID, clusterID int64) error {
	return s.withTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM clusters WHERE tenant_id = $1 AND id = $2`, tenantID, clusterID)
		if err != nil {
			return fmt.Errorf("delete cluster: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return notFound("cluster")
		}
		return pgnotify.Notify(ctx, tx, Channel, "cluster:"+strconv.FormatInt(clusterID, 10))
	})
}
