package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/portcullis-dev/portcullis/internal/apiclient"
	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// nsSync keeps a cluster's inventory in the gateway exact without trusting
// admission traffic: it reads what the cluster's apiserver stored (list,
// and with --watch an informer) and pushes it to the admin API with a
// token that may do nothing else (a sync token). While its pushes come, the
// gateway learns nothing from the cluster's traffic.
type nsSync struct {
	e               *env
	api             *client
	tenant, cluster string
	core            corev1client.CoreV1Interface
	// dyn reads CRDs; nil when --crds=false.
	dyn dynamic.Interface
	// heartbeat is how often a watching sync pushes when nothing changed.
	heartbeat time.Duration
}

func cmdNamespacesSync(e *env, args []string) error {
	f := e.newFlags("namespaces sync")
	c := f.conn(false)
	tenant, cluster := tenantFlag(f), clusterFlag(f)
	kubeconfig := f.String("kubeconfig", "", "kubeconfig of the tenant's cluster (read-only RBAC on namespaces and CRDs is enough); in-cluster service account when empty")
	watch := f.Bool("watch", false, "keep watching and pushing changes, with a heartbeat, until stopped")
	crds := f.Bool("crds", true, "push the cluster's CustomResourceDefinitions too")
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	if err := required("tenant", *tenant, "cluster", *cluster); err != nil {
		return err
	}
	// An empty path falls back to the in-cluster configuration.
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return usageErr("--kubeconfig %q: %v", *kubeconfig, err)
	}
	cfg.UserAgent = "portcullis-namespace-sync"
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return usageErr("--kubeconfig %q: %v", *kubeconfig, err)
	}
	s := &nsSync{e: e, tenant: *tenant, cluster: *cluster, core: core, heartbeat: 30 * time.Second}
	if *crds {
		if s.dyn, err = dynamic.NewForConfig(cfg); err != nil {
			return usageErr("--kubeconfig %q: %v", *kubeconfig, err)
		}
	}
	if s.api, err = e.connect(c); err != nil {
		return err
	}
	if *watch {
		return s.watch(e.ctx)
	}
	return s.once(e.ctx)
}

// once lists the cluster's namespaces (and CRDs) and pushes them whole.
func (s *nsSync) once(ctx context.Context) error {
	var nss []corev1.Namespace
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := s.core.Namespaces().List(ctx, opts)
		if err != nil {
			return fmt.Errorf("listing the cluster's namespaces: %w", err)
		}
		nss = append(nss, list.Items...)
		if opts.Continue = list.Continue; opts.Continue == "" {
			break
		}
	}
	ptrs := make([]*corev1.Namespace, len(nss))
	for i := range nss {
		ptrs[i] = &nss[i]
	}
	res, err := s.push(ctx, apiv1.NamespaceSync{Full: true}, ptrs)
	if err != nil {
		return err
	}
	s.e.printf("%d namespaces of cluster %q pushed at %s\n", len(nss), s.cluster, res.PushedAt.UTC().Format(time.RFC3339))
	if s.dyn == nil {
		return nil
	}
	list, err := s.dyn.Resource(crdResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the cluster's CRDs: %w", err)
	}
	items := make([]any, len(list.Items))
	for i := range list.Items {
		items[i] = list.Items[i].Object
	}
	n, err := s.pushCRDs(ctx, items)
	if err != nil {
		return err
	}
	s.e.printf("%d CRDs of cluster %q pushed\n", n, s.cluster)
	return nil
}

// push sends one NamespaceSync with nss as its namespaces.
func (s *nsSync) push(ctx context.Context, in apiv1.NamespaceSync, nss []*corev1.Namespace) (apiv1.NamespaceSyncResult, error) {
	var res apiv1.NamespaceSyncResult
	for _, ns := range nss {
		c := ns.DeepCopy()
		c.ManagedFields = nil
		c.APIVersion, c.Kind = "v1", "Namespace"
		js, err := json.Marshal(c)
		if err != nil {
			return res, err
		}
		in.Namespaces = append(in.Namespaces, js)
	}
	e := *s.e
	e.ctx = ctx
	_, err := s.api.sendJSON(&e, http.MethodPost, apiPath("tenants", s.tenant, "clusters", s.cluster, "namespaces", "sync"), nil, in, &res)
	if err != nil {
		return res, fmt.Errorf("pushing namespaces: %w", err)
	}
	return res, nil
}

// pushCRDs replaces the cluster's CRDs with items (unstructured objects).
func (s *nsSync) pushCRDs(ctx context.Context, items []any) (int, error) {
	body, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		return 0, err
	}
	e := *s.e
	e.ctx = ctx
	raw, err := s.api.do(&e, apiclient.Request{Method: http.MethodPut, Path: apiPath("tenants", s.tenant, "clusters", s.cluster, "crds"),
		Body: body, ContentType: "application/json"})
	if err != nil {
		return 0, fmt.Errorf("pushing CRDs: %w", err)
	}
	var r apiv1.CRDImport
	if err := json.Unmarshal(raw, &r); err != nil {
		return 0, fmt.Errorf("the server's answer: %w", err)
	}
	return r.CRDs, nil
}
