package api

import (
	"encoding/json"
	"fmt"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
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

func (s *Server) listCRDs(c *call) error {
	cl, err := s.cluster(c)
	if err != nil {
		return err
	}
	crds, err := s.Inventory.ListCRDs(c.ctx(), c.tenant.ID, cl.ID)
	if err != nil {
		return err
	}
	return listInventory(c, crds, func(crd *inventory.CRD) string { return crd.Name },
		func(crd *inventory.CRD) (json.RawMessage, error) { return crd.Object, nil })
}

func (s *Server) importCRDs(c *call) error {
	// A cluster may have no CRDs at all: an empty List replaces the
	// inventory with none.
	cl, objs, err := s.inventoryUpload(c, splitSet)
	if err != nil {
		return err
	}
	crds := make([]*inventory.CRD, len(objs))
	for i, js := range objs {
		var tm struct{ APIVersion, Kind string }
		err := json.Unmarshal(js, &tm)
		switch {
		case err == nil && tm.Kind != inventory.CRDKind:
			return fault.InvalidField(fmt.Sprintf("items[%d].kind", i),
				"must be %s, not %q: this inventory holds CustomResourceDefinition objects only", inventory.CRDKind, tm.Kind)
		case err == nil && tm.APIVersion != inventory.CRDAPIVersion:
			return fault.InvalidField(fmt.Sprintf("items[%d].apiVersion", i), "must be %s, not %q", inventory.CRDAPIVersion, tm.APIVersion)
		}
		if err == nil {
			crds[i], err = inventory.DecodeCRD(js)
		}
		if err != nil {
			return fault.InvalidField(fmt.Sprintf("items[%d]", i), "not a valid CustomResourceDefinition: %v", err)
		}
	}
	if err := s.Inventory.ReplaceCRDs(c.ctx(), c.tenant.ID, cl.ID, crds); err != nil {
		return err
	}
	c.audit(auditlog.Entry{Action: "import", Kind: "CRDInventory", Name: cl.Name,
		Detail: map[string]any{"cluster": cl.Name, "crds": len(crds)}})
	return c.json(apiv1.CRDImport{CRDs: len(crds)})
}
