package api

import (
	"encoding/json"
	"fmt"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/inventory"
)

func (s *Server) crdRoutes() []route {
	return []route{
		{method: "GET", path: clusterPath + "/crds", access: tenantViewer,
			summary: "The cluster's CustomResourceDefinitions", query: pagingParams,
			response: apiv1.List[json.RawMessage]{}, handle: s.listCRDs},
		{method: "PUT", path: clusterPath + "/crds", access: clusterSync,
			summary:  "Replace the cluster's CustomResourceDefinitions",
			rawBody:  "CustomResourceDefinition objects (apiextensions.k8s.io/v1): a List or CustomResourceDefinitionList as `kubectl get crd -o yaml|json` prints it, or multi-document YAML; an empty List says the cluster has none",
			response: apiv1.CRDImport{}, handle: s.importCRDs},
	}
}

func (s *Server) crdInventory() clusterInventory[*inventory.CRD] {
	return clusterInventory[*inventory.CRD]{
		list: s.Inventory.ListCRDs, replace: s.Inventory.ReplaceCRDs,
		name:   func(crd *inventory.CRD) string { return crd.Name },
		encode: func(crd *inventory.CRD) (json.RawMessage, error) { return crd.Object, nil },
		// A cluster may have no CRDs at all: an empty List replaces the
		// inventory with none.
		split: splitSet, decode: decodeCRD,
		auditKind: "CRDInventory", counted: "crds",
		answer: func(n int) any { return apiv1.CRDImport{CRDs: n} },
	}
}

func (s *Server) listCRDs(c *call) error { return listClusterInventory(s, c, s.crdInventory()) }

func (s *Server) importCRDs(c *call) error { return importClusterInventory(s, c, s.crdInventory()) }

func decodeCRD(i int, js []byte) (*inventory.CRD, error) {
	var tm struct{ APIVersion, Kind string }
	err := json.Unmarshal(js, &tm)
	switch {
	case err == nil && tm.Kind != inventory.CRDKind:
		return nil, fault.InvalidField(fmt.Sprintf("items[%d].kind", i),
			"must be %s, not %q: this inventory holds CustomResourceDefinition objects only", inventory.CRDKind, tm.Kind)
	case err == nil && tm.APIVersion != inventory.CRDAPIVersion:
		return nil, fault.InvalidField(fmt.Sprintf("items[%d].apiVersion", i), "must be %s, not %q", inventory.CRDAPIVersion, tm.APIVersion)
	}
	var crd *inventory.CRD
	if err == nil {
		crd, err = inventory.DecodeCRD(js)
	}
	if err != nil {
		return nil, fault.InvalidField(fmt.Sprintf("items[%d]", i), "not a valid CustomResourceDefinition: %v", err)
	}
	return crd, nil
}
