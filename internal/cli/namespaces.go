package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

func cmdNamespacesImport(e *env, args []string) error {
	return e.importInventory(args, inventoryImport{
		command:  "namespaces import",
		objects:  "Namespace objects, YAML or JSON, as kubectl get namespaces -o yaml prints them",
		resource: "namespaces",
		noun:     "namespaces",
		count: func(raw []byte) (int, error) {
			var r apiv1.NamespaceImport
			err := json.Unmarshal(raw, &r)
			return r.Namespaces, err
		},
	})
}

func contentType(body []byte) string {
	if t := strings.TrimSpace(string(body)); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		return "application/json"
	}
	return "application/yaml"
}

// onlyCluster is the tenant's cluster when it has exactly one; otherwise
// the user must say which with --cluster.
func (e *env) onlyCluster(cl *client, tenant string) (string, error) {
	clusters, _, err := listAll[apiv1.Cluster](e, cl, apiPath("tenants", tenant, "clusters"), nil)
	if err != nil {
		return "", err
	}
	names := make([]string, len(clusters))
	for i, x := range clusters {
		names[i] = x.Name
	}
	switch len(names) {
	case 1:
		return names[0], nil
	case 0:
		return "", usageErr("tenant %q has no cluster: create one with `admin cluster create`", tenant)
	}
	return "", usageErr("tenant %q has %d clusters (%s): say which with --cluster", tenant, len(names), strings.Join(names, ", "))
}

func (e *env) getNamespaces(cl *client, c *connFlags, tenant, cluster, name string) error {
	return getInventory(e, cl, c, inventoryGet[storedObject]{
		tenant: tenant, cluster: cluster, resource: "namespaces", name: name,
		nameOf:  func(ns storedObject) string { return ns.Metadata.Name },
		missing: fmt.Sprintf("namespace %q is not in the inventory of cluster %q (upload it with `admin namespaces import`)", name, cluster),
		print:   printNamespaces,
	})
}

func printNamespaces(w io.Writer, now time.Time, nss []storedObject) error {
	t := newTable(w, "NAME", "STATUS", "LABELS", "AGE")
	for _, ns := range nss {
		t.row(ns.Metadata.Name, ns.Status.Phase, labels(ns.Metadata.Labels), age(now, ns.Metadata.CreationTimestamp))
	}
	return t.flush()
}
