package inventory

import (
	"context"
	"sync"
)

// workQueue holds the cache's background work per cluster, so that one
// cluster's flood can never make another lose its work: learned writes wait
// in a bounded FIFO of their own cluster (only that cluster's writes are
// dropped when it is full), and notified changes are coalesced per cluster
// into a set of names to refresh (or one whole reload), which is never
// dropped. The worker takes the clusters in turn, one item each.
type workQueue struct {
	perCluster int

	mu    sync.Mutex
	work  map[clusterKey]*clusterWork
	ready []clusterKey // clusters with work, in turn
	wake  chan struct{}
}

type clusterWork struct {
	writes []func(context.Context) error
	// names are the namespaces to refresh from the database; reload, the
	// whole inventory (which covers every name).
	names  map[string]struct{}
	reload bool
}

func (w *clusterWork) empty() bool { return len(w.writes) == 0 && len(w.names) == 0 && !w.reload }

func newWorkQueue(perCluster int) *workQueue {
	return &workQueue{perCluster: perCluster, work: map[clusterKey]*clusterWork{}, wake: make(chan struct{}, 1)}
}

// get returns key's work, adding key to the turn when it had none; the
// caller holds mu.
func (q *workQueue) get(key clusterKey) *clusterWork {
	w, ok := q.work[key]
	if !ok {
		w = &clusterWork{}
		q.work[key] = w
		q.ready = append(q.ready, key)
	}
	return w
}

func (q *workQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// write queues a learned write of key's cluster; false when that cluster
// already has perCluster writes waiting.
func (q *workQueue) write(key clusterKey, fn func(context.Context) error) bool {
	q.mu.Lock()
	w := q.get(key)
	ok := len(w.writes) < q.perCluster
	if ok {
		w.writes = append(w.writes, fn)
	} else if w.empty() {
		q.forgetLocked(key)
	}
	q.mu.Unlock()
	if ok {
		q.signal()
	}
	return ok
}

// refresh asks for name of key's cluster to be read again from the
// database; "" for the whole inventory. More than perCluster names
// collapse into one whole reload.
func (q *workQueue) refresh(key clusterKey, name string) {
	q.mu.Lock()
	w := q.get(key)
	switch {
	case w.reload:
	case name == "" || len(w.names) >= q.perCluster:
		w.reload, w.names = true, nil
	default:
		if w.names == nil {
			w.names = map[string]struct{}{}
		}
		w.names[name] = struct{}{}
	}
	q.mu.Unlock()
	q.signal()
}

// forgetLocked drops key, which has no work, from the queue.
func (q *workQueue) forgetLocked(key clusterKey) {
	delete(q.work, key)
	for i, k := range q.ready {
		if k == key {
			q.ready = append(q.ready[:i], q.ready[i+1:]...)
			break
		}
	}
}

// item is one unit of work taken from the queue: a learned write, or the
// refresh of a cluster's names (all when reload).
type item struct {
	key    clusterKey
	write  func(context.Context) error
	names  []string
	reload bool
}

// next takes the next item, the cluster whose turn it is; false when there
// is none. A cluster's refreshes come before its writes: they are few
// (coalesced) and another replica's change should not wait behind this
// replica's flood.
func (q *workQueue) next() (item, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.ready) == 0 {
		return item{}, false
	}
	key := q.ready[0]
	q.ready = q.ready[1:]
	w := q.work[key]
	it := item{key: key}
	switch {
	case w.reload || len(w.names) > 0:
		it.reload = w.reload
		for n := range w.names {
			it.names = append(it.names, n)
		}
		w.reload, w.names = false, nil
	default:
		it.write = w.writes[0]
		w.writes[0] = nil
		w.writes = w.writes[1:]
	}
	if w.empty() {
		delete(q.work, key)
	} else {
		q.ready = append(q.ready, key)
	}
	return it, true
}
