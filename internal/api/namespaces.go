package api

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/fault"
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

func (s *Server) namespaceInventory() clusterInventory[*corev1.Namespace] {
	return clusterInventory[*corev1.Namespace]{
		list: s.Inventory.ListNamespaces, replace: s.Inventory.ReplaceNamespaces,
		name: func(ns *corev1.Namespace) string { return ns.Name },
		encode: func(ns *corev1.Namespace) (json.RawMessage, error) {
			ns.APIVersion, ns.Kind = "v1", "Namespace"
			return json.Marshal(ns)
		},
		split: splitObjects, decode: decodeNamespace,
		auditKind: "NamespaceInventory", counted: "namespaces",
		answer: func(n int) any { return apiv1.NamespaceImport{Namespaces: n} },
	}
}

func (s *Server) listNamespaces(c *call) error {
	return listClusterInventory(s, c, s.namespaceInventory())
}

func (s *Server) importNamespaces(c *call) error {
	return importClusterInventory(s, c, s.namespaceInventory())
}

func decodeNamespace(i int, js []byte) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{}
	err := json.Unmarshal(js, ns)
	switch {
	case ns.Kind != "Namespace":
		return nil, fault.InvalidField(fmt.Sprintf("items[%d].kind", i),
			"must be Namespace, not %q: the inventory holds Namespace objects only", ns.Kind)
	case ns.APIVersion != "v1":
		return nil, fault.InvalidField(fmt.Sprintf("items[%d].apiVersion", i), "must be v1, not %q", ns.APIVersion)
	case err != nil:
		return nil, fault.InvalidField(fmt.Sprintf("items[%d]", i), "not a valid Namespace: %v", err)
	}
	return ns, nil
}
