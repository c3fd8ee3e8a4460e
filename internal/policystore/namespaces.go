package policystore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgnotify"
)

// Namespace sources.
const (
	SourceUpload  = "upload"
	SourceLearned = "learned"
)

var kindNamespace = corev1.SchemeGroupVersion.WithKind("Namespace").GroupKind()

// cleanNamespace copies ns without managedFields, with its type meta set,
// and checks its name.
func cleanNamespace(ns *corev1.Namespace) (*corev1.Namespace, []byte, error) {
	c, js, errs, err := checkNamespace(ns)
	if len(errs) > 0 {
		name := ""
		if ns != nil {
			name = ns.Name
		}
		return nil, nil, invalid(kindNamespace, name, errs)
	}
	return c, js, err
}

// checkNamespace is cleanNamespace, returning the field errors of a bad
// namespace instead of an error.
func checkNamespace(ns *corev1.Namespace) (*corev1.Namespace, []byte, field.ErrorList, error) {
	if ns == nil || ns.Name == "" {
		return nil, nil, field.ErrorList{field.Required(field.NewPath("metadata", "name"), "")}, nil
	}
	if msgs := validation.IsDNS1123Label(ns.Name); len(msgs) > 0 {
		return nil, nil, field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), ns.Name, strings.Join(msgs, "; "))}, nil
	}
	c := ns.DeepCopy()
	c.ManagedFields = nil
	c.APIVersion, c.Kind = "v1", "Namespace"
	js, err := json.Marshal(c)
	if err != nil {
		return nil, nil, nil, err
	}
	errs, err := JSONTextErrors(js)
	if err != nil || len(errs) > 0 {
		return nil, nil, errs, err
	}
	return c, js, nil, nil
}

// GetNamespace returns one namespace of the cluster's inventory.
func (s *Store) GetNamespace(ctx context.Context, tenantID, clusterID int64, name string) (*corev1.Namespace, error) {
	var js []byte
	err := s.pool.QueryRow(ctx, `SELECT object FROM cluster_namespaces WHERE tenant_id = $1 AND cluster_id = $2 AND name = $3`,
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

// ListNamespaces returns the cluster's inventory, by name.
func (s *Store) ListNamespaces(ctx context.Context, tenantID, clusterID int64) ([]*corev1.Namespace, error) {
	rows, err := s.pool.Query(ctx, `SELECT object FROM cluster_namespaces WHERE tenant_id = $1 AND cluster_id = $2 ORDER BY name`,
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

// UpsertNamespace records one namespace learned from an allowed request.
// The webhook calls it through NamespaceCache.Learn, off the hot path.
func (s *Store) UpsertNamespace(ctx context.Context, tenantID, clusterID int64, ns *corev1.Namespace) error {
	_, js, err := cleanNamespace(ns)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO cluster_namespaces (tenant_id, cluster_id, name, object, source)
			VALUES ($1, $2, $3, $4, 'learned')
			ON CONFLICT (tenant_id, cluster_id, name) DO UPDATE SET object = EXCLUDED.object, source = 'learned', updated_at = now()`,
			tenantID, clusterID, ns.Name, js); err != nil {
			return namespaceWriteError(err, tenantID, clusterID)
		}
		return pgnotify.Notify(ctx, tx, ChannelNamespaces, fmt.Sprintf("%d:%d:%s", tenantID, clusterID, ns.Name))
	})
}

// MarkNamespaceTerminating records that the namespace is being deleted
// (an allowed DELETE): status.phase Terminating and a deletionTimestamp, as
// the apiserver sets them. The namespace stays until the next upload, since
// the gateway never sees its finalization. fault.NotFound if it is not known.
func (s *Store) MarkNamespaceTerminating(ctx context.Context, tenantID, clusterID int64, name string, at time.Time) error {
	ts, err := json.Marshal(metav1.NewTime(at.UTC()))
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE cluster_namespaces SET
			object = jsonb_set(jsonb_set(object, '{status}', coalesce(object->'status', '{}') || '{"phase":"Terminating"}'),
			                   '{metadata,deletionTimestamp}', coalesce(object->'metadata'->'deletionTimestamp', $4::jsonb)),
			source = 'learned', updated_at = now()
			WHERE tenant_id = $1 AND cluster_id = $2 AND name = $3`, tenantID, clusterID, name, string(ts))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notFound(kindNamespace, name)
		}
		return pgnotify.Notify(ctx, tx, ChannelNamespaces, fmt.Sprintf("%d:%d:%s", tenantID, clusterID, name))
	})
}

// ReplaceNamespaces makes nss the cluster's whole inventory: an upload is
// the source of truth, so namespaces not in it are removed.
func (s *Store) ReplaceNamespaces(ctx context.Context, tenantID, clusterID int64, nss []*corev1.Namespace) error {
	names := make([]string, 0, len(nss))
	objs := make([][]byte, 0, len(nss))
	seen := map[string]bool{}
	var errs field.ErrorList
	for i, ns := range nss {
		_, js, nsErrs, err := checkNamespace(ns)
		if err != nil {
			return err
		}
		if len(nsErrs) > 0 {
			for _, c := range nsErrs {
				c.Field = field.NewPath("items").Index(i).String() + "." + c.Field
				errs = append(errs, c)
			}
			continue
		}
		if seen[ns.Name] {
			errs = append(errs, field.Duplicate(field.NewPath("items").Index(i).Child("metadata", "name"), ns.Name))
			continue
		}
		seen[ns.Name] = true
		names, objs = append(names, ns.Name), append(objs, js)
	}
	if len(errs) > 0 {
		return invalid(kindNamespaceList, "", errs)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM cluster_namespaces WHERE tenant_id = $1 AND cluster_id = $2 AND NOT (name = ANY($3))`,
			tenantID, clusterID, names); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO cluster_namespaces (tenant_id, cluster_id, name, object, source)
			SELECT $1, $2, n, o, 'upload' FROM unnest($3::text[], $4::jsonb[]) AS u(n, o)
			ON CONFLICT (tenant_id, cluster_id, name) DO UPDATE SET object = EXCLUDED.object, source = 'upload', updated_at = now()`,
			tenantID, clusterID, names, objs); err != nil {
			return namespaceWriteError(err, tenantID, clusterID)
		}
		return pgnotify.Notify(ctx, tx, ChannelNamespaces, fmt.Sprintf("%d:%d:", tenantID, clusterID))
	})
}

var kindNamespaceList = corev1.SchemeGroupVersion.WithKind("NamespaceList").GroupKind()

func namespaceWriteError(err error, tenantID, clusterID int64) error {
	if strings.Contains(err.Error(), "23503") {
		return fault.Wrap(err, fault.NotFound, "cluster %d of tenant %d not found", clusterID, tenantID)
	}
	return err
}

// Inventory is one cluster's namespaces in memory. It implements
// evaluator.NamespaceLookup and is safe for concurrent use.
type Inventory struct {
	mu sync.RWMutex
	m  map[string]*corev1.Namespace
	// pending holds what this replica learned and has not written yet. A
	// reload from the database (an upload elsewhere, a reconnect) keeps
	// these, so a learned namespace never vanishes between being learned
	// and being stored.
	pending map[string]*corev1.Namespace
}

func newInventory(m map[string]*corev1.Namespace) *Inventory {
	return &Inventory{m: m, pending: map[string]*corev1.Namespace{}}
}

var _ evaluator.NamespaceLookup = (*Inventory)(nil)

// Namespace implements evaluator.NamespaceLookup. The object returned must
// not be modified.
func (inv *Inventory) Namespace(name string) (*corev1.Namespace, bool) {
	inv.mu.RLock()
	ns, ok := inv.m[name]
	inv.mu.RUnlock()
	return ns, ok
}

// Len returns the number of known namespaces.
func (inv *Inventory) Len() int {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	return len(inv.m)
}

func (inv *Inventory) set(ns *corev1.Namespace) {
	inv.mu.Lock()
	inv.m[ns.Name] = ns
	inv.mu.Unlock()
}

// learn sets ns and remembers it until written says it is stored.
func (inv *Inventory) learn(ns *corev1.Namespace) {
	inv.mu.Lock()
	inv.m[ns.Name] = ns
	inv.pending[ns.Name] = ns
	inv.mu.Unlock()
}

// written forgets a learned namespace once its write has been attempted:
// from then on the database (and its notifications) is the truth.
func (inv *Inventory) written(ns *corev1.Namespace) {
	inv.mu.Lock()
	if inv.pending[ns.Name] == ns {
		delete(inv.pending, ns.Name)
	}
	inv.mu.Unlock()
}

// replace swaps in a fresh load in place, so that holders of the inventory
// see it, and keeps what is still pending.
func (inv *Inventory) replace(m map[string]*corev1.Namespace) {
	inv.mu.Lock()
	for name, ns := range inv.pending {
		m[name] = ns
	}
	inv.m = m
	inv.mu.Unlock()
}

func (inv *Inventory) remove(name string) {
	inv.mu.Lock()
	delete(inv.m, name)
	inv.mu.Unlock()
}

type clusterKey struct{ tenant, cluster int64 }

// NamespaceConfig sizes a NamespaceCache. Zero values take the defaults.
type NamespaceConfig struct {
	MaxClusters int // default 10,000
	QueueSize   int // learned writes waiting for the database; default 10,000
	Logger      *slog.Logger
	Registry    *prometheus.Registry
}

// NamespaceCache serves each cluster's namespace inventory from memory, per
// (tenant, cluster). A learned namespace is visible at once on this replica;
// it is written to the database in the background and reaches the other
// replicas by notification.
type NamespaceCache struct {
	store *Store
	cfg   NamespaceConfig
	lru   *lru.Cache[clusterKey, *Inventory]
	group singleflight.Group
	queue chan func(context.Context) error

	dropped, writeErrors prometheus.Counter
}

// NewNamespaceCache returns a namespace cache over store. Call Subscribe
// before the listener runs, and Run.
func NewNamespaceCache(store *Store, cfg NamespaceConfig) (*NamespaceCache, error) {
	if cfg.MaxClusters <= 0 {
		cfg.MaxClusters = 10_000
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 10_000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	l, err := lru.New[clusterKey, *Inventory](cfg.MaxClusters)
	if err != nil {
		return nil, err
	}
	n := &NamespaceCache{store: store, cfg: cfg, lru: l, queue: make(chan func(context.Context) error, cfg.QueueSize),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "portcullis", Subsystem: "namespace_inventory",
			Name: "learned_dropped_total", Help: "Learned namespace writes dropped because the queue was full."}),
		writeErrors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "portcullis", Subsystem: "namespace_inventory",
			Name: "write_errors_total", Help: "Learned namespace writes that failed."}),
	}
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(n.dropped, n.writeErrors)
	}
	return n, nil
}

// Lookup returns the cluster's inventory, loading it on first use. When the
// database cannot be reached it returns an empty, uncached inventory and the
// error: the evaluator treats every namespace as unknown then, and a binding
// that needs one follows its failurePolicy; labels are never guessed.
func (n *NamespaceCache) Lookup(ctx context.Context, tenantID, clusterID int64) (*Inventory, error) {
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
			return newInventory(map[string]*corev1.Namespace{}),
				fault.Wrap(r.Err, fault.Unavailable, "namespace inventory unavailable")
		}
		return r.Val.(*Inventory), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (n *NamespaceCache) load(key clusterKey) (*Inventory, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	nss, err := n.store.ListNamespaces(ctx, key.tenant, key.cluster)
	if err != nil {
		return nil, err
	}
	m := make(map[string]*corev1.Namespace, len(nss))
	for _, ns := range nss {
		m[ns.Name] = ns
	}
	if inv, ok := n.lru.Peek(key); ok {
		inv.replace(m)
		return inv, nil
	}
	inv := newInventory(m)
	n.lru.Add(key, inv)
	return inv, nil
}

// Learn records a namespace seen in an allowed, non-dry-run request. It is
// visible to Lookup on this replica at once; the database write happens in
// the background (dropped, and counted, if the queue is full).
func (n *NamespaceCache) Learn(tenantID, clusterID int64, ns *corev1.Namespace) {
	c, _, err := cleanNamespace(ns)
	if err != nil {
		return
	}
	inv, ok := n.lru.Peek(clusterKey{tenantID, clusterID})
	if ok {
		inv.learn(c)
	}
	n.enqueueLearned(inv, c, func(ctx context.Context) error { return n.store.UpsertNamespace(ctx, tenantID, clusterID, c) })
}

// LearnTerminating records an allowed DELETE of a namespace.
func (n *NamespaceCache) LearnTerminating(tenantID, clusterID int64, name string) {
	now := time.Now().UTC()
	inv, _ := n.lru.Peek(clusterKey{tenantID, clusterID})
	var c *corev1.Namespace
	if inv != nil {
		if cur, ok := inv.Namespace(name); ok {
			c = cur.DeepCopy()
			c.Status.Phase = corev1.NamespaceTerminating
			if c.DeletionTimestamp == nil {
				t := metav1.NewTime(now.Truncate(time.Second))
				c.DeletionTimestamp = &t
			}
			inv.learn(c)
		}
	}
	n.enqueueLearned(inv, c, func(ctx context.Context) error {
		err := n.store.MarkNamespaceTerminating(ctx, tenantID, clusterID, name, now)
		if fault.ErrorCode(err) == fault.NotFound {
			return nil
		}
		return err
	})
}

// enqueueLearned queues the write of a learned namespace; once it has been
// tried (or dropped), inv stops keeping ns across reloads. inv or ns may be
// nil when nothing was set in memory.
func (n *NamespaceCache) enqueueLearned(inv *Inventory, ns *corev1.Namespace, write func(context.Context) error) {
	done := func() {
		if inv != nil && ns != nil {
			inv.written(ns)
		}
	}
	if !n.enqueue(func(ctx context.Context) error { defer done(); return write(ctx) }) {
		done()
	}
}

func (n *NamespaceCache) enqueue(fn func(context.Context) error) bool {
	select {
	case n.queue <- fn:
		return true
	default:
		n.dropped.Inc()
		return false
	}
}

// Subscribe registers for inventory changes made by any replica, and for a
// full reload of the cached inventories after every (re)connect.
func (n *NamespaceCache) Subscribe(l *pgnotify.Listener) {
	l.Subscribe(ChannelNamespaces, n.notified)
	l.OnConnect(func() {
		for _, k := range n.lru.Keys() {
			n.enqueue(func(context.Context) error { _, err := n.load(k); return err })
		}
	})
}

func (n *NamespaceCache) notified(payload string) {
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
	if _, ok := n.lru.Peek(key); !ok {
		return
	}
	n.enqueue(func(ctx context.Context) error {
		if name == "" {
			_, err := n.load(key)
			return err
		}
		ns, err := n.store.GetNamespace(ctx, t, c, name)
		inv, ok := n.lru.Peek(key)
		switch {
		case !ok:
		case fault.ErrorCode(err) == fault.NotFound:
			inv.remove(name)
		case err != nil:
			return err
		default:
			inv.set(ns)
		}
		return nil
	})
}

// Run writes learned namespaces and applies notified changes until ctx
// ends.
func (n *NamespaceCache) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case fn := <-n.queue:
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if err := fn(wctx); err != nil && ctx.Err() == nil {
				n.writeErrors.Inc()
				n.cfg.Logger.Warn("namespace inventory update failed", "error", err)
			}
			cancel()
		}
	}
}
