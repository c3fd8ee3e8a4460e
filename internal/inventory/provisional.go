package inventory

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
)

// GetProvisional returns what an allowed request proposed for the
// namespace and nothing has confirmed yet.
func (s *Store) GetProvisional(ctx context.Context, tenantID, clusterID int64, name string) (*corev1.Namespace, error) {
	var js []byte
	err := s.pool.QueryRow(ctx, `SELECT object FROM cluster_namespaces_provisional WHERE tenant_id = $1 AND cluster_id = $2 AND name = $3`,
		tenantID, clusterID, name).Scan(&js)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound(kindNamespace, name)
	}
	if err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{}
	return ns, json.Unmarshal(js, ns)
}

// ListProvisional returns the cluster's provisional namespaces, by name.
func (s *Store) ListProvisional(ctx context.Context, tenantID, clusterID int64) ([]*corev1.Namespace, error) {
	rows, err := s.pool.Query(ctx, `SELECT object FROM cluster_namespaces_provisional WHERE tenant_id = $1 AND cluster_id = $2 ORDER BY name`,
		tenantID, clusterID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*corev1.Namespace, error) {
		var js []byte
		if err := row.Scan(&js); err != nil {
			return nil, err
		}
		ns := &corev1.Namespace{}
		return ns, json.Unmarshal(js, ns)
	})
}
