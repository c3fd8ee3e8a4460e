package inventory

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// Cluster is one cluster's inventory in memory. It is safe for concurrent
// use, and its Namespace method makes it an evaluator.NamespaceLookup.
type Cluster struct {
	mu sync.RWMutex
	m  map[string]*corev1.Namespace
	// pending holds what this replica learned and has not written yet. A
	// reload from the database (an upload elsewhere, a reconnect) keeps
	// these, so a learned namespace never vanishes between being learned
	// and being stored.
	pending map[string]*corev1.Namespace
}

func newCluster(m map[string]*corev1.Namespace) *Cluster {
	return &Cluster{m: m, pending: map[string]*corev1.Namespace{}}
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
func (inv *Cluster) replace(m map[string]*corev1.Namespace) {
	inv.mu.Lock()
	for name, ns := range inv.pending {
		m[name] = ns
	}
	inv.m = m
	inv.mu.Unlock()
}

func (inv *Cluster) remove(name string) {
	inv.mu.Lock()
	delete(inv.m, name)
	inv.mu.Unlock()
}
