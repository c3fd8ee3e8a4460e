package inventory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgnotify"
)

type clusterKey struct{ tenant, cluster int64 }

// Config sizes a Cache. Zero values take the defaults.
type Config struct {
	MaxClusters int // default 10,000
	// QueueSize bounds the learned writes waiting for the database, per
	// cluster; default 1,000. Notified changes are coalesced per cluster
	// and never dropped (queue.go).
	QueueSize int
	Logger    *slog.Logger
	Registry  *prometheus.Registry

	// ProvisionalTTL drops a provisional namespace that nothing proposed
	// again or confirmed for this long; default DefaultProvisionalTTL.
	ProvisionalTTL time.Duration

	// ResyncInterval is how often every cached cluster is reloaded from
	// the database, which repairs whatever a lost notification or a
	// failed refresh left stale; default DefaultResyncInterval.
	ResyncInterval time.Duration
}

// DefaultResyncInterval is Config.ResyncInterval's default.
const DefaultResyncInterval = 5 * time.Minute

// Cache serves each cluster's inventory from memory, per (tenant,
// cluster). What the webhook observes is visible at once on this replica;
// it is written to the database in the background and reaches the other
// replicas by notification.
type Cache struct {
	store *Store
	cfg   Config
	lru   *lru.Cache[clusterKey, *Cluster]
	group singleflight.Group
	queue *workQueue

	dropped, writeErrors prometheus.Counter
	refused              *prometheus.CounterVec
}

// NewCache returns a cache over store. Call Subscribe before the listener
// runs, and Run.
func NewCache(store *Store, cfg Config) (*Cache, error) {
	if cfg.MaxClusters <= 0 {
		cfg.MaxClusters = 10_000
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 1_000
	}
	if cfg.ResyncInterval <= 0 {
		cfg.ResyncInterval = DefaultResyncInterval
	}
	if cfg.ProvisionalTTL <= 0 {
		cfg.ProvisionalTTL = DefaultProvisionalTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	l, err := lru.New[clusterKey, *Cluster](cfg.MaxClusters)
	if err != nil {
		return nil, err
	}
	n := &Cache{store: store, cfg: cfg, lru: l, queue: newWorkQueue(cfg.QueueSize),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "portcullis", Subsystem: "namespace_inventory",
			Name: "learned_dropped_total", Help: "Learned namespace writes dropped because their cluster's queue was full."}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "portcullis", Subsystem: "namespace_inventory",
			Name: "learned_refused_total", Help: "Namespaces seen in requests and not learned, by reason: invalid (a bad name, labels or annotations, or over the size bound) or over_bound (new to a cluster that holds as many namespaces as its bound allows)."},
			[]string{"reason"}),
		writeErrors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "portcullis", Subsystem: "namespace_inventory",
			Name: "write_errors_total", Help: "Learned namespace writes that failed."}),
	}
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(n.dropped, n.writeErrors, n.refused)
	}
	return n, nil
}

// Lookup returns the cluster's inventory, loading it on first use. When the
// database cannot be reached it returns an empty, uncached inventory and the
// error: the evaluator treats every namespace as unknown then, and a binding
// that needs one follows its failurePolicy; labels are never guessed.
func (n *Cache) Lookup(ctx context.Context, tenantID, clusterID int64) (*Cluster, error) {
	key := clusterKey{tenantID, clusterID}
	if inv, ok := n.lru.Get(key); ok {
		return inv, nil
	}
	ch := n.group.DoChan(fmt.Sprintf("%d:%d", tenantID, clusterID), func() (any, error) {
		return n.load(key)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return newCluster(map[string]*corev1.Namespace{}, map[string]*corev1.Namespace{}, nil, time.Time{}),
				fault.Wrap(r.Err, fault.Unavailable, "namespace inventory unavailable")
		}
		return r.Val.(*Cluster), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (n *Cache) load(key clusterKey) (*Cluster, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	nss, err := n.store.ListNamespaces(ctx, key.tenant, key.cluster)
	if err != nil {
		return nil, err
	}
	provs, err := n.store.ListProvisional(ctx, key.tenant, key.cluster)
	if err != nil {
		return nil, err
	}
	crds, err := n.store.ListCRDs(ctx, key.tenant, key.cluster)
	if err != nil {
		return nil, err
	}
	pushed, err := n.store.SyncPushedAt(ctx, key.tenant, key.cluster)
	if err != nil {
		return nil, err
	}
	var syncedUntil time.Time
	if !pushed.IsZero() {
		syncedUntil = pushed.Add(SyncLease)
	}
	b, err := n.store.Bounds(ctx, key.tenant)
	if err != nil {
		return nil, err
	}
	byResource := crdIndex(crds)
	m, prov := byName(nss), byName(provs)
	if inv, ok := n.lru.Peek(key); ok {
		inv.replace(m, prov, byResource, syncedUntil)
		inv.setBound(b.Namespaces)
		return inv, nil
	}
	inv := newCluster(m, prov, byResource, syncedUntil)
	inv.setBound(b.Namespaces)
	n.lru.Add(key, inv)
	return inv, nil
}

func byName(nss []*corev1.Namespace) map[string]*corev1.Namespace {
	m := make(map[string]*corev1.Namespace, len(nss))
	for _, ns := range nss {
		m[ns.Name] = ns
	}
	return m
}

// Observe records what a request on a namespace showed: committed is its
// oldObject (what the apiserver had stored), provisional the object of an
// allowed, non-dry-run CREATE or UPDATE; either may be nil. It is visible
// to Lookup on this replica at once; the database write happens in the
// background (dropped, and counted, if the cluster's queue is full). While
// a sync runs for the cluster it does nothing: the sync is the truth. A
// namespace that is invalid or over the size bound, or new to a cluster
// holding as many as its bound allows, is not learned (and is counted).
func (n *Cache) Observe(tenantID, clusterID int64, committed, provisional *corev1.Namespace) {
	o := &observation{}
	if committed != nil {
		c, _, err := cleanNamespace(committed)
		if err != nil {
			n.refused.WithLabelValues("invalid").Inc()
			return
		}
		o.committed, o.name = c, c.Name
	}
	if provisional != nil {
		p, _, err := cleanNamespace(provisional)
		if err != nil {
			n.refused.WithLabelValues("invalid").Inc()
			return
		}
		if o.name != "" && p.Name != o.name {
			return
		}
		o.provisional, o.name = p, p.Name
	}
	if o.name == "" {
		return
	}
	key := clusterKey{tenantID, clusterID}
	inv, ok := n.lru.Peek(key)
	if ok {
		if inv.Synced(time.Now()) {
			return
		}
		if !inv.admits(o.name) {
			n.refused.WithLabelValues("over_bound").Inc()
			return
		}
		inv.observe(o)
	}
	n.enqueueObserved(key, inv, o, func(ctx context.Context) error {
		err := n.store.Observe(ctx, tenantID, clusterID, o.committed, o.provisional)
		if errors.Is(err, errOverBound) {
			n.refused.WithLabelValues("over_bound").Inc()
			return nil
		}
		return err
	})
}

// LearnNamespaceTerminating records an allowed DELETE of a namespace.
func (n *Cache) LearnNamespaceTerminating(tenantID, clusterID int64, name string) {
	now := time.Now().UTC()
	inv, _ := n.lru.Peek(clusterKey{tenantID, clusterID})
	var o *observation
	if inv != nil {
		if inv.Synced(now) {
			return
		}
		if cur, ok := inv.Namespace(name); ok {
			c := cur.DeepCopy()
			c.Status.Phase = corev1.NamespaceTerminating
			if c.DeletionTimestamp == nil {
				t := metav1.NewTime(now.Truncate(time.Second))
				c.DeletionTimestamp = &t
			}
			o = &observation{name: name, committed: c}
			inv.observe(o)
		}
	}
	n.enqueueObserved(clusterKey{tenantID, clusterID}, inv, o, func(ctx context.Context) error {
		err := n.store.MarkNamespaceTerminating(ctx, tenantID, clusterID, name, now)
		if fault.ErrorCode(err) == fault.NotFound {
			return nil
		}
		return err
	})
}

// enqueueObserved queues the write of an observation; once it has been
// tried (or dropped), inv stops keeping o across reloads. inv or o may be
// nil when nothing was set in memory.
func (n *Cache) enqueueObserved(key clusterKey, inv *Cluster, o *observation, write func(context.Context) error) {
	done := func() {
		if inv != nil && o != nil {
			inv.written(o)
		}
	}
	if !n.queue.write(key, func(ctx context.Context) error { defer done(); return write(ctx) }) {
		n.dropped.Inc()
		done()
	}
}

// Subscribe registers for inventory changes made by any replica, and for a
// full reload of the cached inventories after every (re)connect.
func (n *Cache) Subscribe(l *pgnotify.Listener) {
	l.Subscribe(ChannelNamespaces, n.notified)
	l.OnConnect(n.resync)
}

// resync asks for every cached cluster to be reloaded from the database.
func (n *Cache) resync() {
	for _, k := range n.lru.Keys() {
		n.queue.refresh(k, "")
	}
}

func (n *Cache) notified(payload string) {
	parts := strings.SplitN(payload, ":", 3)
	if len(parts) != 3 {
		return
	}
	t, err1 := strconv.ParseInt(parts[0], 10, 64)
	c, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil {
		return
	}
	key, name := clusterKey{t, c}, parts[2]
	inv, ok := n.lru.Peek(key)
	if !ok {
		return
	}
	if ms, found := strings.CutPrefix(name, syncPrefix); found {
		// A sync's heartbeat: no namespace changed, its lease did.
		if v, err := strconv.ParseInt(ms, 10, 64); err == nil {
			inv.setSyncedUntil(time.UnixMilli(v).Add(SyncLease))
		}
		return
	}
	n.queue.refresh(key, name)
}

// refreshNames reads names of the cluster again from the database.
func (n *Cache) refreshNames(ctx context.Context, key clusterKey, names []string) error {
	for _, name := range names {
		committed, err := n.store.GetNamespace(ctx, key.tenant, key.cluster, name)
		if err != nil && fault.ErrorCode(err) != fault.NotFound {
			return err
		}
		prov, err := n.store.GetProvisional(ctx, key.tenant, key.cluster, name)
		if err != nil && fault.ErrorCode(err) != fault.NotFound {
			return err
		}
		if inv, ok := n.lru.Peek(key); ok {
			inv.set(name, committed, prov)
		}
	}
	return nil
}

// Run writes learned namespaces, applies notified changes, expires
// provisional namespaces and resyncs the cached clusters until ctx ends.
func (n *Cache) Run(ctx context.Context) error {
	expire := time.NewTicker(provisionalExpiryEvery(n.cfg.ProvisionalTTL))
	defer expire.Stop()
	resync := time.NewTicker(n.cfg.ResyncInterval)
	defer resync.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-expire.C:
			if err := n.expireProvisional(ctx); err != nil && ctx.Err() == nil {
				n.cfg.Logger.Warn("namespace inventory expiry failed; trying again later", "error", err)
			}
		case <-resync.C:
			n.resync()
		case <-n.queue.wake:
			n.drain(ctx)
		}
	}
}

// drain runs the queued work, the clusters in turn, until none is left or
// ctx ends.
func (n *Cache) drain(ctx context.Context) {
	for ctx.Err() == nil {
		it, ok := n.queue.next()
		if !ok {
			return
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var err error
		switch {
		case it.write != nil:
			err = it.write(wctx)
		case it.reload:
			if _, cached := n.lru.Peek(it.key); cached {
				_, err = n.load(it.key)
			}
		default:
			err = n.refreshNames(wctx, it.key, it.names)
		}
		cancel()
		if err != nil && ctx.Err() == nil {
			n.writeErrors.Inc()
			n.cfg.Logger.Warn("namespace inventory update failed", "error", err)
		}
	}
}
