package inventory

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Cluster is one cluster's inventory in memory. It is safe for concurrent
// use. Its Namespace method makes it an evaluator.NamespaceLookup, its
// CRDConversion method an evaluator.CRDLookup, its CRDObject method an
// evaluator.CRDSchemaLookup.
type Cluster struct {
	mu sync.RWMutex
	m  map[string]*corev1.Namespace
	// crds are the uploaded CustomResourceDefinitions, by the resource they
	// serve. They are never learned, so nothing of them is pending.
	crds map[schema.GroupResource]*CRD
	// pending holds what this replica learned and has not written yet. A
	// reload from the database (an upload elsewhere, a reconnect) keeps
	// these, so a learned namespace never vanishes between being learned
	// and being stored.
	pending map[string]*corev1.Namespace
}

func newCluster(m map[string]*corev1.Namespace, crds map[schema.GroupResource]*CRD) *Cluster {
	return &Cluster{m: m, crds: crds, pending: map[string]*corev1.Namespace{}}
}

// Namespace returns the named namespace, if known. The object returned must
// not be modified.
func (inv *Cluster) Namespace(name string) (*corev1.Namespace, bool) {
	inv.mu.RLock()
	ns, ok := inv.m[name]
	inv.mu.RUnlock()
	return ns, ok
}

// NamespaceCount returns the number of known namespaces.
func (inv *Cluster) NamespaceCount() int {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	return len(inv.m)
}

func (inv *Cluster) set(ns *corev1.Namespace) {
	inv.mu.Lock()
	inv.m[ns.Name] = ns
	inv.mu.Unlock()
}

// learn sets ns and remembers it until written says it is stored.
func (inv *Cluster) learn(ns *corev1.Namespace) {
	inv.mu.Lock()
	inv.m[ns.Name] = ns
	inv.pending[ns.Name] = ns
	inv.mu.Unlock()
}

// written forgets a learned namespace once its write has been attempted:
// from then on the database (and its notifications) is the truth.
func (inv *Cluster) written(ns *corev1.Namespace) {
	inv.mu.Lock()
	if inv.pending[ns.Name] == ns {
		delete(inv.pending, ns.Name)
	}
	inv.mu.Unlock()
}

// replace swaps in a fresh load in place, so that holders of the inventory
// see it, and keeps what is still pending.
func (inv *Cluster) replace(m map[string]*corev1.Namespace, crds map[schema.GroupResource]*CRD) {
	inv.mu.Lock()
	for name, ns := range inv.pending {
		m[name] = ns
	}
	inv.m, inv.crds = m, crds
	inv.mu.Unlock()
}

func (inv *Cluster) remove(name string) {
	inv.mu.Lock()
	delete(inv.m, name)
	inv.mu.Unlock()
}

// CRD returns the CustomResourceDefinition that serves gr, if uploaded. The
// object returned must not be modified.
func (inv *Cluster) CRD(gr schema.GroupResource) (*CRD, bool) {
	inv.mu.RLock()
	c, ok := inv.crds[gr]
	inv.mu.RUnlock()
	return c, ok
}

// CRDConversion returns the conversion strategy (None when unset) and the
// version names of the CRD that serves gr; false when it was not uploaded.
func (inv *Cluster) CRDConversion(gr schema.GroupResource) (strategy string, versions []string, ok bool) {
	c, ok := inv.CRD(gr)
	if !ok {
		return "", nil, false
	}
	return c.Strategy(), c.VersionNames(), true
}

// CRDObject returns the uploaded object of the CRD that serves gr and a
// key of its spec within the tenant; false when it was not uploaded. The
// object must not be modified.
func (inv *Cluster) CRDObject(gr schema.GroupResource) (object []byte, key string, ok bool) {
	c, ok := inv.CRD(gr)
	if !ok {
		return nil, "", false
	}
	return c.Object, c.key, true
}

// CRDCount returns the number of known CRDs.
func (inv *Cluster) CRDCount() int {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	return len(inv.crds)
}
