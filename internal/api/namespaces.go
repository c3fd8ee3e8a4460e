package api

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

func (s *Server) namespaceRoutes() []route {
	return []route{
		{method: "GET", path: clusterPath + "/namespaces", access: tenantViewer,
			summary: "The cluster's namespace inventory", query: pagingParams,
			response: apiv1.List[json.RawMessage]{}, handle: s.listNamespaces},
		{method: "PUT", path: clusterPath + "/namespaces", access: tenantAdmin,
			summary:  "Replace the cluster's namespace inventory",
			rawBody:  "Namespace objects: a List or NamespaceList as `kubectl get namespaces -o yaml|json` prints it, or multi-document YAML",
			response: apiv1.NamespaceImport{}, handle: s.importNamespaces},
	}
}

func (s *Server) listNamespaces(c *call) error {
	cl, err := s.cluster(c)
	if err != nil {
		return err
	}
	nss, err := s.Inventory.ListNamespaces(c.ctx(), c.tenant.ID, cl.ID)
	if err != nil {
		return err
	}
	return listInventory(c, nss, func(ns *corev1.Namespace) string { return ns.Name },
		func(ns *corev1.Namespace) (json.RawMessage, error) {
			ns.APIVersion, ns.Kind = "v1", "Namespace"
			return json.Marshal(ns)
		})
}

// listInventory answers one page of a cluster's inventory objects, in
// name order.
func listInventory[T any](c *call, items []T, name func(T) string, encode func(T) (json.RawMessage, error)) error {
	// The database sorts by its collation; paging compares bytes.
	slices.SortFunc(items, func(a, b T) int { return strings.Compare(name(a), name(b)) })
	p, err := page(c, items, name)
	if err != nil {
		return err
	}
	out := apiv1.List[json.RawMessage]{Items: make([]json.RawMessage, len(p.Items)), Continue: p.Continue}
	for i, item := range p.Items {
		if out.Items[i], err = encode(item); err != nil {
			return err
		}
	}
	return c.json(out)
}

func (s *Server) importNamespaces(c *call) error {
	cl, objs, err := s.inventoryUpload(c, splitObjects)
	if err != nil {
		return err
	}
	nss := make([]*corev1.Namespace, len(objs))
	for i, js := range objs {
		ns := &corev1.Namespace{}
		err := json.Unmarshal(js, ns)
		switch {
		case ns.Kind != "Namespace":
			return fault.InvalidField(fmt.Sprintf("items[%d].kind", i),
				"must be Namespace, not %q: the inventory holds Namespace objects only", ns.Kind)
		case ns.APIVersion != "v1":
			return fault.InvalidField(fmt.Sprintf("items[%d].apiVersion", i), "must be v1, not %q", ns.APIVersion)
		case err != nil:
			return fault.InvalidField(fmt.Sprintf("items[%d]", i), "not a valid Namespace: %v", err)
		}
		nss[i] = ns
	}
	if err := s.Inventory.ReplaceNamespaces(c.ctx(), c.tenant.ID, cl.ID, nss); err != nil {
		return err
	}
	c.audit(auditlog.Entry{Action: "import", Kind: "NamespaceInventory", Name: cl.Name,
		Detail: map[string]any{"cluster": cl.Name, "namespaces": len(nss)}})
	return c.json(apiv1.NamespaceImport{Namespaces: len(nss)})
}

// inventoryUpload is the cluster of an inventory upload (PUT of a List or
// multi-document YAML) and its objects, items[i] each, as split reads them.
func (s *Server) inventoryUpload(c *call, split func(body []byte, list string) ([][]byte, error)) (tenancy.Cluster, [][]byte, error) {
	cl, err := s.cluster(c)
	if err != nil {
		return tenancy.Cluster{}, nil, err
	}
	body, err := c.body()
	if err != nil {
		return tenancy.Cluster{}, nil, err
	}
	objs, err := split(body, "items")
	return cl, objs, err
}
