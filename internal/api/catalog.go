package api

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/catalog"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/policystore"
)

func (s *Server) catalogRoutes() []route {
	dryRun := []param{{"dryRun", "true: check and report the results (and, for an upgrade, the diff), write nothing"}}
	return []route{
		{method: "GET", path: "/api/v1/catalog", summary: "The policy catalog's entries", access: authenticated,
			response: apiv1.List[apiv1.CatalogEntry]{}, handle: s.listCatalog},
		{method: "GET", path: "/api/v1/catalog/{name}", summary: "One catalog entry, with its objects as YAML", access: authenticated,
			response: apiv1.CatalogEntry{}, handle: s.showCatalog},
		{method: "GET", path: "/api/v1/tenants/{tenant}/catalog", access: tenantViewer,
			summary:  "The catalog's entries, with the version the tenant has installed",
			response: apiv1.List[apiv1.CatalogEntry]{}, handle: s.listTenantCatalog},
		{method: "POST", path: "/api/v1/tenants/{tenant}/catalog/{name}/install", access: tenantAdmin,
			summary: "Install a catalog entry: apply its policies, bindings and params, marked with the entry and its version",
			query:   dryRun, request: apiv1.CatalogInstall{}, response: apiv1.CatalogResult{}, handle: s.installCatalog},
		{method: "POST", path: "/api/v1/tenants/{tenant}/catalog/{name}/upgrade", access: tenantAdmin,
			summary: "Replace an installed catalog entry with the catalog's version, keeping the tenant's action, cluster selector and param values; answers the diff",
			query:   dryRun, response: apiv1.CatalogResult{}, handle: s.upgradeCatalog},
	}
}

func catalogEntry(e catalog.Entry) apiv1.CatalogEntry {
	out := apiv1.CatalogEntry{Name: e.Name, Version: e.Version, Category: e.Category, Description: e.Description}
	for _, p := range e.Params {
		out.Params = append(out.Params, apiv1.CatalogParam{ConfigMap: p.ConfigMap, Key: p.Key, Default: p.Default, Description: p.Description})
	}
	return out
}

// lookupEntry is the {name} of the path.
func lookupEntry(c *call) (catalog.Entry, error) {
	name := c.r.PathValue("name")
	e, ok := catalog.Get(name)
	if !ok {
		return e, fault.Errorf(fault.NotFound, "the catalog has no entry %q (GET /api/v1/catalog lists them)", name)
	}
	return e, nil
}

// catalogTarget is what an install and an upgrade start from: the entry
// of the path and ?dryRun.
func catalogTarget(c *call) (catalog.Entry, bool, error) {
	e, err := lookupEntry(c)
	if err != nil {
		return e, false, err
	}
	dryRun, err := c.queryBool("dryRun")
	return e, dryRun, err
}

// applyCatalog applies the documents of entry e and deletes the installed
// objects in removed (an upgrade's leftovers), in one transaction: should
// a deletion fail, the new version is not applied either, and the tenant
// keeps the old one whole. Each deletion is of the version the caller
// read: an edit made since is not deleted unseen (409, and nothing
// changes). It returns the apply's result and the deletions.
func (s *Server) applyCatalog(c *call, e catalog.Entry, docs [][]byte, removed []*policystore.Object, dryRun bool) (
	apiv1.ApplyResult, []apiv1.ApplyItem, error) {
	dels := make([]policystore.Deletion, len(removed))
	for i, h := range removed {
		dels[i] = policystore.Deletion{Ref: h.Ref, ResourceVersion: strconv.FormatInt(h.ResourceVersion, 10)}
	}
	outcomes, deleted, version, err := s.Policies.ApplyAndDelete(c.ctx(), c.tenant.ID, c.principal.Name, docs, dels, dryRun)
	if err != nil {
		return apiv1.ApplyResult{}, nil, err
	}
	if !dryRun {
		c.auditApply(outcomes)
	}
	var items []apiv1.ApplyItem
	for i, h := range removed {
		d := deleted[i]
		if !dryRun {
			c.audit(auditlog.Entry{Action: actionDelete, Kind: h.Kind, Namespace: h.Namespace, Name: h.Name,
				VersionBefore: versionPtr(d.VersionBefore), VersionAfter: versionPtr(d.Tombstone.Version),
				Detail: map[string]any{"group": h.Group, "catalogUpgrade": e.Name}})
		}
		items = append(items, apiv1.ApplyItem{APIVersion: h.APIVersion, Kind: h.Kind, Namespace: h.Namespace, Name: h.Name,
			Action: apiv1.ActionDeleted, ResourceVersion: d.Tombstone.Version})
	}
	return applyResult(outcomes, version, dryRun), items, nil
}

// marshalAll is the apply documents of rendered objects.
func marshalAll(objs []map[string]any) ([][]byte, error) {
	docs := make([][]byte, len(objs))
	for i, o := range objs {
		js, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		docs[i] = js
	}
	return docs, nil
}

func (s *Server) listCatalog(c *call) error {
	out := apiv1.List[apiv1.CatalogEntry]{Items: []apiv1.CatalogEntry{}}
	for _, e := range catalog.List() {
		out.Items = append(out.Items, catalogEntry(e))
	}
	return c.json(out)
}

func (s *Server) showCatalog(c *call) error {
	e, err := lookupEntry(c)
	if err != nil {
		return err
	}
	out := catalogEntry(e)
	out.YAML = string(e.YAML)
	return c.json(out)
}

func (s *Server) listTenantCatalog(c *call) error {
	objs, err := s.Policies.List(c.ctx(), c.tenant.ID, policystore.ListOptions{LabelSelector: catalog.LabelEntry})
	if err != nil {
		return err
	}
	installed := map[string]string{}
	for _, o := range objs {
		if name := o.Object.GetLabels()[catalog.LabelEntry]; installed[name] == "" {
			installed[name] = o.Object.GetAnnotations()[catalog.AnnotationVersion]
		}
	}
	out := apiv1.List[apiv1.CatalogEntry]{Items: []apiv1.CatalogEntry{}}
	for _, e := range catalog.List() {
		item := catalogEntry(e)
		item.Installed = installed[e.Name]
		out.Items = append(out.Items, item)
	}
	return c.json(out)
}

// installed returns the tenant's objects installed from entry e.
func (s *Server) installed(c *call, e catalog.Entry) ([]*policystore.Object, error) {
	return s.Policies.List(c.ctx(), c.tenant.ID, policystore.ListOptions{LabelSelector: catalog.LabelEntry + "=" + e.Name})
}

// refOf is the store's reference of a rendered object.
func refOf(o map[string]any) policystore.Ref {
	meta, _ := o["metadata"].(map[string]any)
	apiVersion, _ := o["apiVersion"].(string)
	group := ""
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		group = g
	}
	kind, _ := o["kind"].(string)
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	return policystore.Ref{Group: group, Kind: kind, Namespace: ns, Name: name}
}
