package tenancy

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Load reads every credential that is not revoked and publishes them. Run
// calls it; tests may call it directly.
func (a *Authenticator) Load(ctx context.Context) error {
	a.loadMu.Lock()
	defer a.loadMu.Unlock()
	started := a.now()
	rows, err := a.pool.Query(ctx, `
		SELECT cr.id, cr.type, cr.token_hash, cr.fingerprint, cr.username, cr.password_hash, cr.url_secret_hash, cr.expires_at,
		       t.id, t.name, c.id, c.name, c.labels
		FROM credentials cr
		JOIN clusters c ON c.tenant_id = cr.tenant_id AND c.id = cr.cluster_id
		JOIN tenants t ON t.id = cr.tenant_id
		WHERE cr.revoked_at IS NULL AND (cr.expires_at IS NULL OR cr.expires_at > now())`)
	if err != nil {
		return fmt.Errorf("load credentials: %w", err)
	}
	defer rows.Close()
	old := a.snap.Load()
	s := &snapshot{
		tokens:   map[[32]byte]*entry{},
		certs:    map[[32]byte]*entry{},
		basic:    map[string]*entry{},
		urls:     map[[32]byte]*entry{},
		byID:     map[int64]*entry{},
		loadedAt: started,
	}
	labelsByCluster := map[int64]map[string]string{}
	for rows.Next() {
		var (
			e                 entry
			typ               string
			tokenHash, fp     []byte
			urlHash           []byte
			username, phc     *string
			expiresAt         *time.Time
			labelsJSON        []byte
			tenantID, cluster int64
		)
		if err := rows.Scan(&e.id.CredentialID, &typ, &tokenHash, &fp, &username, &phc, &urlHash, &expiresAt,
			&tenantID, &e.id.TenantName, &cluster, &e.id.ClusterName, &labelsJSON); err != nil {
			return fmt.Errorf("load credentials: %w", err)
		}
		e.id.TenantID, e.id.ClusterID, e.id.CredentialType = tenantID, cluster, CredentialType(typ)
		labels, ok := labelsByCluster[cluster]
		if !ok {
			if err := json.Unmarshal(labelsJSON, &labels); err != nil {
				return fmt.Errorf("load credentials: cluster %d labels: %w", cluster, err)
			}
			if labels == nil {
				labels = map[string]string{}
			}
			labelsByCluster[cluster] = labels
		}
		e.id.ClusterLabels = labels
		if expiresAt != nil {
			e.expiresAt = *expiresAt
		}
		ep := &e
		var prev *entry
		if old != nil {
			prev = old.byID[e.id.CredentialID]
		}
		if prev != nil {
			ep.usage = prev.usage
		} else {
			ep.usage = &usage{}
		}
		switch e.id.CredentialType {
		case CredentialToken:
			copy(ep.hash[:], tokenHash)
			s.tokens[ep.hash] = ep
		case CredentialCertificate:
			copy(ep.hash[:], fp)
			s.certs[ep.hash] = ep
		case CredentialURL:
			copy(ep.hash[:], urlHash)
			s.urls[ep.hash] = ep
		case CredentialBasic:
			ep.phc = *phc
			if prev != nil && prev.phc == ep.phc {
				ep.basicOK.Store(prev.basicOK.Load())
			}
			s.basic[*username] = ep
		default:
			continue
		}
		s.byID[ep.id.CredentialID] = ep
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load credentials: %w", err)
	}
	s.clusters = map[int64]int{}
	seen := map[int64]bool{}
	for _, e := range s.byID {
		if !seen[e.id.ClusterID] {
			seen[e.id.ClusterID] = true
			s.clusters[e.id.TenantID]++
		}
	}

	// Publish, then re-apply every tombstone heard after this load began:
	// the rows may predate it. Older tombstones are settled (the rows read
	// already reflect them) and are dropped.
	a.mu.Lock()
	a.snap.Store(s)
	for key, heard := range a.tombstones {
		if heard.Before(started) {
			delete(a.tombstones, key)
			continue
		}
		kind, idStr, _ := strings.Cut(key, ":")
		id, _ := strconv.ParseInt(idStr, 10, 64)
		s.applyTombstone(kind, id)
	}
	a.mu.Unlock()
	return nil
}

// Clusters says how many of the tenant's clusters can call the webhook
// (have a credential that is neither revoked nor expired), as of the last
// load: the limiter shares the tenant's limits between them.
func (a *Authenticator) Clusters(tenantID int64) int {
	s := a.snap.Load()
	if s == nil {
		return 0
	}
	return s.clusters[tenantID]
}
