package api

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

// clusterPath is one cluster; its artifacts, credentials and namespaces
// are under it.
const clusterPath = "/api/v1/tenants/{tenant}/clusters/{cluster}"

func (s *Server) clusterRoutes() []route {
	return []route{
		{method: "GET", path: "/api/v1/tenants/{tenant}/clusters", summary: "List the tenant's clusters",
			access:   tenantViewer,
			query:    append([]param{{"labelSelector", "a Kubernetes label selector, e.g. env=prod,tier!=edge"}}, pagingParams...),
			response: apiv1.List[apiv1.Cluster]{}, handle: s.listClusters},
		{method: "POST", path: "/api/v1/tenants/{tenant}/clusters",
			summary: "Create a cluster, and with `credential` set its first credential and artifacts",
			access:  tenantAdmin, request: apiv1.ClusterCreate{}, response: apiv1.ClusterCreated{},
			status: http.StatusCreated, handle: s.createCluster},
		{method: "GET", path: clusterPath, summary: "Get a cluster", access: tenantViewer,
			response: apiv1.Cluster{}, handle: s.getCluster},
		{method: "PATCH", path: clusterPath, summary: "Replace a cluster's labels", access: tenantAdmin,
			request: apiv1.ClusterUpdate{}, response: apiv1.Cluster{}, handle: s.updateCluster},
		{method: "DELETE", path: clusterPath, summary: "Delete a cluster and its credentials", access: tenantAdmin,
			status: http.StatusNoContent, handle: s.deleteCluster},
	}
}

func toCluster(tenant string, c tenancy.Cluster) apiv1.Cluster {
	out := apiv1.Cluster{Name: c.Name, Tenant: tenant, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
	if len(c.Labels) > 0 {
		out.Labels = c.Labels
	}
	return out
}

// cluster resolves {cluster} in the caller's tenant.
func (s *Server) cluster(c *call) (tenancy.Cluster, error) {
	name := c.r.PathValue("cluster")
	cl, err := s.Tenancy.FindClusterByName(c.ctx(), c.tenant.ID, name)
	if fault.ErrorCode(err) == fault.NotFound {
		return tenancy.Cluster{}, clusterNotFound(c.tenant.Name, name)
	}
	return cl, err
}

func clusterNotFound(tenant, name string) *fault.Error {
	return fault.Errorf(fault.NotFound, "cluster %q not found in tenant %q", name, tenant)
}

func (s *Server) listClusters(c *call) error {
	sel := labels.Everything()
	if raw := c.query("labelSelector"); raw != "" {
		var err error
		if sel, err = labels.Parse(raw); err != nil {
			return fault.InvalidField("labelSelector", "%v", err)
		}
	}
	cs, err := s.Tenancy.ListClusters(c.ctx(), c.tenant.ID)
	if err != nil {
		return err
	}
	out := []apiv1.Cluster{}
	for _, cl := range cs {
		if sel.Matches(labels.Set(cl.Labels)) {
			out = append(out, toCluster(c.tenant.Name, cl))
		}
	}
	slices.SortFunc(out, func(x, y apiv1.Cluster) int { return strings.Compare(x.Name, y.Name) })
	l, err := page(c, out, func(cl apiv1.Cluster) string { return cl.Name })
	if err != nil {
		return err
	}
	return c.json(l)
}

func (s *Server) createCluster(c *call) error {
	var in apiv1.ClusterCreate
	if err := c.decode(&in); err != nil {
		return err
	}
	if err := validName("name", in.Name); err != nil {
		return err
	}
	if err := validLabels("labels", in.Labels); err != nil {
		return err
	}
	// The credential's options are checked before the cluster exists, so
	// that a bad one leaves nothing behind.
	var req credentialRequest
	if in.Credential != nil {
		var err error
		if req, err = s.credentialRequest(c, "credential.", *in.Credential); err != nil {
			return err
		}
	}
	cl, err := s.Tenancy.CreateCluster(c.ctx(), c.tenant.ID, in.Name, in.Labels)
	if err != nil {
		return err
	}
	out := apiv1.ClusterCreated{Cluster: toCluster(c.tenant.Name, cl)}
	if in.Credential != nil {
		issued, err := s.issue(c, cl, req)
		if err != nil {
			// The caller asked for a cluster with a credential; a cluster
			// without one would be a half-done create.
			// Not c.ctx(): a client that went away must not leave the
			// cluster behind.
			if derr := s.Tenancy.DeleteCluster(context.WithoutCancel(c.ctx()), c.tenant.ID, cl.ID); derr != nil {
				s.Logger.Error("removing a cluster whose first credential failed", "error", derr,
					"tenant", c.tenant.Name, "cluster", cl.Name)
			}
			return err
		}
		out.Credential = &issued
	}
	c.audit(auditlog.Entry{Action: actionCreate, Kind: "Cluster", Name: cl.Name, Detail: labelsDetail(cl.Labels)})
	if out.Credential != nil {
		c.audit(credentialEntry(actionCreate, cl.Name, out.Credential.Credential))
	}
	return c.json(out)
}

func labelsDetail(l map[string]string) map[string]any {
	return map[string]any{"labels": l}
}

func (s *Server) getCluster(c *call) error {
	cl, err := s.cluster(c)
	if err != nil {
		return err
	}
	return c.json(toCluster(c.tenant.Name, cl))
}

func (s *Server) updateCluster(c *call) error {
	cl, err := s.cluster(c)
	if err != nil {
		return err
	}
	var in apiv1.ClusterUpdate
	if err := c.decode(&in); err != nil {
		return err
	}
	// An absent field is refused rather than read as "no labels": a PATCH
	// that says nothing must not wipe them.
	if in.Labels == nil {
		return fault.InvalidField("labels", "is required; {} removes every label")
	}
	if err := validLabels("labels", in.Labels); err != nil {
		return err
	}
	updated, err := s.Tenancy.SetClusterLabels(c.ctx(), c.tenant.ID, cl.ID, in.Labels)
	if fault.ErrorCode(err) == fault.NotFound {
		return clusterNotFound(c.tenant.Name, cl.Name)
	}
	if err != nil {
		return err
	}
	c.audit(auditlog.Entry{Action: actionUpdate, Kind: "Cluster", Name: cl.Name,
		Detail: map[string]any{"labelsBefore": cl.Labels, "labels": updated.Labels}})
	return c.json(toCluster(c.tenant.Name, updated))
}

func (s *Server) deleteCluster(c *call) error {
	cl, err := s.cluster(c)
	if err != nil {
		return err
	}
	err = s.Tenancy.DeleteCluster(c.ctx(), c.tenant.ID, cl.ID)
	if fault.ErrorCode(err) == fault.NotFound {
		return clusterNotFound(c.tenant.Name, cl.Name)
	}
	if err != nil {
		return err
	}
	c.audit(auditlog.Entry{Action: actionDelete, Kind: "Cluster", Name: cl.Name})
	return c.noContent()
}
