package api

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/inventory"
)

func (s *Server) namespaceSyncRoutes() []route {
	return []route{
		{method: "POST", path: clusterPath + "/namespaces/sync", access: clusterSync,
			summary: "Push the cluster's namespace sync: a full list, watch events, or a heartbeat; while pushes come, the gateway learns nothing from the cluster's traffic",
			request: apiv1.NamespaceSync{}, response: apiv1.NamespaceSyncResult{}, handle: s.syncNamespaces},
	}
}

func (s *Server) syncNamespaces(c *call) error {
	cl, err := s.cluster(c)
	if err != nil {
		return err
	}
	var in apiv1.NamespaceSync
	if err := c.decode(&in); err != nil {
		return err
	}
	push := inventory.SyncPush{Full: in.Full, Deleted: in.Deleted, Namespaces: make([]*corev1.Namespace, len(in.Namespaces))}
	for i, js := range in.Namespaces {
		ns := &corev1.Namespace{}
		err := json.Unmarshal(js, ns)
		switch {
		case err != nil:
			return fault.InvalidField(fmt.Sprintf("namespaces[%d]", i), "not a valid Namespace: %v", err)
		case ns.Kind != "" && ns.Kind != "Namespace":
			return fault.InvalidField(fmt.Sprintf("namespaces[%d].kind", i), "must be Namespace, not %q", ns.Kind)
		}
		push.Namespaces[i] = ns
	}
	for i, name := range in.Deleted {
		if name == "" {
			return fault.InvalidField(fmt.Sprintf("deleted[%d]", i), "is empty")
		}
	}
	pushed, err := s.Inventory.Sync(c.ctx(), c.tenant.ID, cl.ID, push)
	if err != nil {
		return err
	}
	// Heartbeats would flood the audit log; what changed the inventory is
	// recorded.
	if in.Full || len(in.Namespaces) > 0 || len(in.Deleted) > 0 {
		c.audit(auditlog.Entry{Action: "sync", Kind: "NamespaceInventory", Name: cl.Name,
			Detail: map[string]any{"cluster": cl.Name, "full": in.Full, "namespaces": len(in.Namespaces), "deleted": len(in.Deleted)}})
	}
	return c.json(apiv1.NamespaceSyncResult{PushedAt: pushed, LeaseSeconds: int(inventory.SyncLease.Seconds())})
}
