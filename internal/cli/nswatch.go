package cli

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// retryAfter is how long a watching sync waits after a failed push before
// pushing the whole inventory again.
const retryAfter = 5 * time.Second

// pending is what the informers saw and the gateway has not been told.
type pending struct {
	mu sync.Mutex
	// changed maps a namespace's name to its object, nil once deleted.
	changed map[string]*corev1.Namespace
	// full asks for the whole inventory: at the start, and after a failed
	// push, since the gateway may have missed anything before it.
	full      bool
	crdsDirty bool
	wake      chan struct{}
}

func (p *pending) note(f func()) {
	p.mu.Lock()
	f()
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// watch runs informers on the cluster's namespaces (and CRDs) and pushes
// every change, the whole inventory first and after any failed push, and
// a heartbeat when nothing changed, until ctx ends.
func (s *nsSync) watch(ctx context.Context) error {
	p := &pending{changed: map[string]*corev1.Namespace{}, full: true, crdsDirty: s.dyn != nil, wake: make(chan struct{}, 1)}
	nsLW := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return s.core.Namespaces().List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return s.core.Namespaces().Watch(ctx, o)
		},
	}
	nsInf := cache.NewSharedIndexInformer(nsLW, &corev1.Namespace{}, 0, cache.Indexers{})
	set := func(obj any) {
		if ns, ok := obj.(*corev1.Namespace); ok {
			p.note(func() { p.changed[ns.Name] = ns })
		}
	}
	if _, err := nsInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if ns, ok := obj.(*corev1.Namespace); ok {
				p.note(func() { p.changed[ns.Name] = nil })
			}
		},
	}); err != nil {
		return err
	}
	go nsInf.RunWithContext(ctx)
	synced := []cache.InformerSynced{nsInf.HasSynced}
	var crdInf cache.SharedIndexInformer
	if s.dyn != nil {
		crds := s.dyn.Resource(crdResource)
		crdInf = cache.NewSharedIndexInformer(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return crds.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return crds.Watch(ctx, o)
			},
		}, &unstructured.Unstructured{}, 0, cache.Indexers{})
		dirty := func() { p.note(func() { p.crdsDirty = true }) }
		if _, err := crdInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { dirty() }, UpdateFunc: func(any, any) { dirty() }, DeleteFunc: func(any) { dirty() },
		}); err != nil {
			return err
		}
		go crdInf.RunWithContext(ctx)
		synced = append(synced, crdInf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil // stopped before the first list
	}
	s.e.printf("watching the namespaces of cluster %q\n", s.cluster)
	tick := time.NewTicker(s.heartbeat)
	defer tick.Stop()
	var retry <-chan time.Time
	heartbeat := true
	for {
		if err := s.flush(ctx, p, nsInf.GetStore(), crdInf, heartbeat); err != nil && ctx.Err() == nil {
			fmt.Fprintf(s.e.stderr, "namespace sync: %v; pushing everything again in %s\n", err, retryAfter)
			p.note(func() { p.full, p.crdsDirty = true, s.dyn != nil })
			retry = time.After(retryAfter)
		}
		heartbeat = false
		select {
		case <-ctx.Done():
			return nil
		case <-p.wake:
			if retry != nil {
				// Wait out the retry delay rather than hammer a failing API.
				select {
				case <-ctx.Done():
					return nil
				case <-retry:
				}
			}
		case <-retry:
		case <-tick.C:
			heartbeat = true
		}
		retry = nil
	}
}

// flush pushes what is pending; with nothing pending, a heartbeat if asked.
func (s *nsSync) flush(ctx context.Context, p *pending, store cache.Store, crdInf cache.SharedIndexInformer, heartbeat bool) error {
	p.mu.Lock()
	full, crdsDirty := p.full, p.crdsDirty
	var in apiv1.NamespaceSync
	var nss []*corev1.Namespace
	if full {
		in.Full = true
		for _, obj := range store.List() {
			if ns, ok := obj.(*corev1.Namespace); ok {
				nss = append(nss, ns)
			}
		}
	} else {
		for name, ns := range p.changed {
			if ns == nil {
				in.Deleted = append(in.Deleted, name)
			} else {
				nss = append(nss, ns)
			}
		}
	}
	clear(p.changed)
	p.full, p.crdsDirty = false, false
	p.mu.Unlock()

	if full || len(nss) > 0 || len(in.Deleted) > 0 || heartbeat {
		if _, err := s.push(ctx, in, nss); err != nil {
			return err
		}
		if full || len(nss) > 0 || len(in.Deleted) > 0 {
			s.e.printf("pushed %d namespaces (%d deleted, full list %v)\n", len(nss), len(in.Deleted), full)
		}
	}
	if crdsDirty && crdInf != nil {
		objs := crdInf.GetStore().List()
		items := make([]any, 0, len(objs))
		for _, obj := range objs {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				items = append(items, u.Object)
			}
		}
		n, err := s.pushCRDs(ctx, items)
		if err != nil {
			return err
		}
		s.e.printf("pushed %d CRDs\n", n)
	}
	return nil
}
