package security

import (
	"context"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

// replica is another gateway replica over the same database, with a cache
// of its own that loads the inventory afresh.
func (g *gateway) replica() *gateway {
	other := &gateway{t: g.t, store: g.store, cache: newCache(g.t, g.store), tenant: g.tenant, cluster: g.cluster}
	h := *g.h
	h.Namespaces = func(ctx context.Context, tenantID, clusterID int64) (evaluator.NamespaceLookup, error) {
		return other.cache.Lookup(ctx, tenantID, clusterID)
	}
	h.Observe = other.cache.Observe
	h.LearnTerminating = other.cache.LearnNamespaceTerminating
	other.h = &h
	return other
}

// Attack 30.1: an UPDATE removes the exemption label; the gateway allows
// it and holds it as provisional. When the provisional TTL passes with no
// later request on the namespace (the normal case), the stale committed
// labels must not apply again: the privileged Pod stays denied, on a
// replica that loads the inventory after the expiry.
func TestLabelChangeOutlivesProvisionalExpiry(t *testing.T) {
	g := newGateway(t, exemptable)
	ctx := context.Background()
	exempt := namespace("team-a", map[string]string{"policy.example.com/exempt": "true"})
	if err := g.store.ReplaceNamespaces(ctx, g.tenant, g.cluster, []*corev1.Namespace{exempt}); err != nil {
		t.Fatal(err)
	}
	if !g.podAllowed("exempt") {
		t.Fatal("an exempt namespace denied the pod: the test proves nothing")
	}
	if !g.review("unexempt", "namespaces", "UPDATE", "team-a", "team-a", namespace("team-a", nil), exempt).Allowed {
		t.Fatal("the gateway denied the label removal")
	}
	g.flush()
	// A day passes: every proposal is past the TTL.
	if _, err := g.store.ExpireAllProvisional(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if g.replica().podAllowed("a-day-later") {
		t.Fatal("the expiry brought back the stale exemption label: the policy stopped applying")
	}
}

// Attack 30.2: the holder of a cluster's URL secret (readable from the
// webhook configurations) forges a Namespace UPDATE whose oldObject carries
// the exemption label. Traffic authenticated only by a URL secret commits
// nothing, so the namespace stays unknown and the binding follows its
// failurePolicy (Fail): the privileged Pod is denied, on this replica and
// another. A forged DELETE does not mark a namespace terminating either.
func TestURLSecretHolderCannotCommitAnExemption(t *testing.T) {
	g := newGateway(t, exemptable)
	ctx := context.Background()
	g.h.Authenticate = func(*http.Request) (tenancy.Identity, error) {
		return tenancy.Identity{TenantID: g.tenant, TenantName: "acme", ClusterID: g.cluster, ClusterName: "prod",
			CredentialType: tenancy.CredentialURL}, nil
	}
	forged := namespace("team-a", map[string]string{"policy.example.com/exempt": "true"})
	g.review("forged", "namespaces", "UPDATE", "team-a", "team-a", forged, forged)
	if g.podAllowed("after-forgery") {
		t.Fatal("a URL secret's forged oldObject committed an exemption")
	}
	g.flush()
	if _, err := g.store.GetNamespace(ctx, g.tenant, g.cluster, "team-a"); err == nil {
		t.Fatal("a URL secret's forged oldObject reached the database as committed")
	}
	if g.replica().podAllowed("other-replica") {
		t.Fatal("another replica took the forged exemption")
	}

	stored := namespace("prod", nil)
	if err := g.store.ReplaceNamespaces(ctx, g.tenant, g.cluster, []*corev1.Namespace{stored}); err != nil {
		t.Fatal(err)
	}
	g.review("forged-delete", "namespaces", "DELETE", "", "prod", nil, stored)
	g.flush()
	got, err := g.store.GetNamespace(ctx, g.tenant, g.cluster, "prod")
	if err != nil || got.Status.Phase == corev1.NamespaceTerminating {
		t.Fatalf("a URL secret's forged DELETE: %v, %v", got, err)
	}
}
