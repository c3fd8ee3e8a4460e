package inventory

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis-dev/portcullis/internal/pgnotify"
)

// DefaultProvisionalTTL is how long a provisional namespace lasts without
// being proposed again or confirmed (Config.ProvisionalTTL).
const DefaultProvisionalTTL = 24 * time.Hour

// GetProvisional returns what an allowed request proposed for the
// namespace and nothing has confirmed yet.
func (s *Store) GetProvisional(ctx context.Context, tenantID, clusterID int64, name string) (*corev1.Namespace, error) {
	return s.getNamespace(ctx, tenantID, clusterID, provisionalTable, name)
}

// ListProvisional returns the cluster's provisional namespaces, by name.
func (s *Store) ListProvisional(ctx context.Context, tenantID, clusterID int64) ([]*corev1.Namespace, error) {
	return s.listNamespaces(ctx, tenantID, clusterID, provisionalTable)
}

// ExpireAllProvisional deletes, in every tenant, the provisional namespaces
// last proposed more than ttl ago that have no committed object, and
// returns the clusters that had any. A created namespace that nothing
// confirmed for that long was most likely rejected after the gateway
// allowed it: kept for ever, such proposals only accumulate (within the
// cluster's bound). A proposal over a committed object stays until a
// committed source replaces it: dropping it would bring back labels known
// to be older, and so silently undo a change (an exemption removed) that
// was most likely stored. Each affected cluster's inventory is reloaded on
// every replica.
func (s *Store) ExpireAllProvisional(ctx context.Context, ttl time.Duration) ([]clusterKey, error) {
	var keys []clusterKey
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `WITH gone AS (
				DELETE FROM cluster_namespaces_provisional p WHERE updated_at < now() - $1::interval
				AND NOT EXISTS (SELECT 1 FROM cluster_namespaces c
					WHERE c.tenant_id = p.tenant_id AND c.cluster_id = p.cluster_id AND c.name = p.name)
				RETURNING tenant_id, cluster_id)
			SELECT DISTINCT tenant_id, cluster_id FROM gone ORDER BY 1, 2`,
			fmt.Sprintf("%d milliseconds", ttl.Milliseconds()))
		if err != nil {
			return err
		}
		keys, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (clusterKey, error) {
			var k clusterKey
			return k, row.Scan(&k.tenant, &k.cluster)
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			// An empty name reloads the cluster's whole inventory.
			if err := pgnotify.Notify(ctx, tx, ChannelNamespaces, fmt.Sprintf("%d:%d:", k.tenant, k.cluster)); err != nil {
				return err
			}
		}
		return nil
	})
	return keys, err
}

// provisionalExpiryEvery is how often Run expires provisional namespaces:
// a quarter of the TTL, at most every 10 minutes (each replica runs one
// DELETE over a small table).
func provisionalExpiryEvery(ttl time.Duration) time.Duration {
	return min(ttl/4, 10*time.Minute)
}

// expireProvisional expires the provisional namespaces older than the TTL
// and reloads the affected clusters this replica holds at once; other
// replicas hear of it by notification.
func (n *Cache) expireProvisional(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	keys, err := n.store.ExpireAllProvisional(ctx, n.cfg.ProvisionalTTL)
	if err != nil {
		return fmt.Errorf("expiring provisional namespaces: %w", err)
	}
	for _, k := range keys {
		if _, ok := n.lru.Peek(k); ok {
			if _, err := n.load(k); err != nil {
				return err
			}
		}
	}
	return nil
}
