package adminauth

import (
	"context"
	"errors"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

// A sync token authenticates as its tenant's cluster, and dies with the
// cluster.
func TestSyncTokenIsScopedToItsCluster(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := NewStore(pool)
	tenant := pgtest.InsertTenant(t, pool)
	cluster := pgtest.InsertCluster(t, pool, tenant)
	other := pgtest.InsertTenant(t, pool)

	tok, secret, err := s.CreateSync(ctx, tenant, cluster, "sync", nil, Creator{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Role != RoleSync || tok.ClusterName == "" || tok.TenantID != tenant {
		t.Fatalf("token %+v", tok)
	}
	p, err := s.Authenticate(ctx, secret)
	if err != nil || p.Role != RoleSync || p.ClusterID != cluster || p.ClusterName != tok.ClusterName || p.TenantID != tenant {
		t.Fatalf("principal %+v, %v", p, err)
	}
	if _, _, err := s.CreateSync(ctx, other, cluster, "sync", nil, Creator{Name: "test"}); err == nil {
		t.Fatal("a sync token of another tenant's cluster was created")
	}
	if _, _, err := s.Create(ctx, tenant, "x", RoleSync, nil, Creator{Name: "test"}); err == nil {
		t.Fatal("a sync token without a cluster was created")
	}
	if _, err := pool.Exec(ctx, `DELETE FROM clusters WHERE id = $1`, cluster); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, secret); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("after the cluster was deleted: %v", err)
	}
}
