package inventory

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Cluster is one cluster's inventory in memory. It is safe for concurrent
// use. Its Namespace method makes it an evaluator.NamespaceLookup, its
// ProvisionalNamespace method an evaluator.ProvisionalNamespaces, its
// CRDConversion method an evaluator.CRDLookup, its CRDObject method an
// evaluator.CRDSchemaLookup.
type Cluster struct {
	mu sync.RWMutex
	// m holds the committed namespaces, prov what allowed requests proposed
	// and nothing has confirmed yet.
	m, prov map[string]*corev1.Namespace
	// crds are the uploaded CustomResourceDefinitions, by the resource they
	// serve. They are never learned, so nothing of them is pending.
	crds map[schema.GroupResource]*CRD
	// syncedUntil is when the lease of the cluster's namespace sync ends:
	// until then the sync is the truth and traffic teaches nothing.
	syncedUntil time.Time
	// pending holds what this replica observed and has not written yet. A
	// reload from the database (an upload elsewhere, a reconnect) applies
	// these again, so an observation never vanishes between being made and
	// being stored.
	pending map[string]*observation
	// bound is how many namespaces (committed and provisional names
	// together) the cluster may hold; 0 when unknown.
	bound int
}

// observation is what one request on a namespace showed: committed is its
// oldObject, provisional the object an allowed CREATE or UPDATE proposed.
// Either may be nil.
type observation struct {
	name                   string
	committed, provisional *corev1.Namespace
}

func newCluster(m, prov map[string]*corev1.Namespace, crds map[schema.GroupResource]*CRD, syncedUntil time.Time) *Cluster {
	return &Cluster{m: m, prov: prov, crds: crds, syncedUntil: syncedUntil, pending: map[string]*observation{}}
}

// Namespace returns the named namespace's committed object, if known. The
// object returned must not be modified.
func (inv *Cluster) Namespace(name string) (*corev1.Namespace, bool) {
	inv.mu.RLock()
	ns, ok := inv.m[name]
	inv.mu.RUnlock()
	return ns, ok
}

// ProvisionalNamespace returns what an allowed request proposed for the
// namespace and nothing has confirmed yet, if anything. The object returned
// must not be modified.
func (inv *Cluster) ProvisionalNamespace(name string) (*corev1.Namespace, bool) {
	inv.mu.RLock()
	ns, ok := inv.prov[name]
	inv.mu.RUnlock()
	return ns, ok
}

// NamespaceCount returns the number of known committed namespaces.
func (inv *Cluster) NamespaceCount() int {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	return len(inv.m)
}

// Synced reports whether a namespace sync is running for the cluster at
// now: then the gateway learns nothing from its traffic.
func (inv *Cluster) Synced(now time.Time) bool {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	return now.Before(inv.syncedUntil)
}

func (inv *Cluster) setSyncedUntil(t time.Time) {
	inv.mu.Lock()
	if t.After(inv.syncedUntil) {
		inv.syncedUntil = t
	}
	inv.mu.Unlock()
}

// set sets the committed (ns) and provisional (prov) objects of name; nil
// removes one.
func (inv *Cluster) set(name string, ns, prov *corev1.Namespace) {
	inv.mu.Lock()
	setOrDelete(inv.m, name, ns)
	setOrDelete(inv.prov, name, prov)
	inv.mu.Unlock()
}

func setOrDelete(m map[string]*corev1.Namespace, name string, ns *corev1.Namespace) {
	if ns == nil {
		delete(m, name)
	} else {
		m[name] = ns
	}
}

// observe applies o and remembers it until written says it is stored.
func (inv *Cluster) observe(o *observation) {
	inv.mu.Lock()
	inv.apply(o)
	inv.pending[o.name] = o
	inv.mu.Unlock()
}

// apply applies o; the caller holds mu. What the apiserver had stored
// confirms or corrects what was proposed before it.
func (inv *Cluster) apply(o *observation) {
	// A stale oldObject (older than the committed object) changes nothing
	// committed, and leaves what was proposed since in place.
	if o.committed != nil && !inv.staleLocked(o.committed) {
		inv.m[o.name] = o.committed
		delete(inv.prov, o.name)
	}
	if o.provisional != nil {
		inv.prov[o.name] = o.provisional
	}
}

// staleLocked reports whether committed is older than the committed object
// of its name; the caller holds mu.
func (inv *Cluster) staleLocked(committed *corev1.Namespace) bool {
	cur, ok := inv.m[committed.Name]
	return ok && olderVersion(committed.ResourceVersion, cur.ResourceVersion)
}

// admits reports whether the inventory may take a namespace of this name:
// one it holds already, or a new one within bound (committed and
// provisional names together).
func (inv *Cluster) admits(name string) bool {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	bound := inv.bound
	if bound <= 0 {
		return true // not loaded from the database: the store checks
	}
	_, c := inv.m[name]
	_, p := inv.prov[name]
	if c || p {
		return true
	}
	n := len(inv.m)
	for k := range inv.prov {
		if _, ok := inv.m[k]; !ok {
			n++
		}
	}
	return n < bound
}

func (inv *Cluster) setBound(b int) {
	inv.mu.Lock()
	inv.bound = b
	inv.mu.Unlock()
}

// written forgets an observation once its write has been attempted: from
// then on the database (and its notifications) is the truth.
func (inv *Cluster) written(o *observation) {
	inv.mu.Lock()
	if inv.pending[o.name] == o {
		delete(inv.pending, o.name)
	}
	inv.mu.Unlock()
}

// replace swaps in a fresh load in place, so that holders of the inventory
// see it, and applies what is still pending.
func (inv *Cluster) replace(m, prov map[string]*corev1.Namespace, crds map[schema.GroupResource]*CRD, syncedUntil time.Time) {
	inv.mu.Lock()
	inv.m, inv.prov, inv.crds = m, prov, crds
	for _, o := range inv.pending {
		inv.apply(o)
	}
	if syncedUntil.After(inv.syncedUntil) {
		inv.syncedUntil = syncedUntil
	}
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
