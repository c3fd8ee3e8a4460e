package inventory

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// GetProvisional returns what an allowed request proposed for the
// namespace and nothing has confirmed yet.
func (s *Store) GetProvisional(ctx context.Context, tenantID, clusterID int64, name string) (*corev1.Namespace, error) {
	return s.getNamespace(ctx, tenantID, clusterID, provisionalTable, name)
}

// ListProvisional returns the cluster's provisional namespaces, by name.
func (s *Store) ListProvisional(ctx context.Context, tenantID, clusterID int64) ([]*corev1.Namespace, error) {
	return s.listNamespaces(ctx, tenantID, clusterID, provisionalTable)
}
