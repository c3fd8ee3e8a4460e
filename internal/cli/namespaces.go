package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

func cmdNamespacesImport(e *env, args []string) error {
	f := e.newFlags("namespaces import")
	c := f.conn(true)
	tenant, cluster := tenantFlag(f), clusterFlag(f)
	file := f.String("f", "", "`FILE` of Namespace objects, YAML or JSON, as kubectl get namespaces -o yaml prints them; - reads stdin")
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	if err := required("tenant", *tenant, "cluster", *cluster, "f", *file); err != nil {
		return err
	}
	body, err := e.readInput(*file)
	if err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	raw, err := cl.do(e, request{method: http.MethodPut, path: apiPath("tenants", *tenant, "clusters", *cluster, "namespaces"),
		body: body, contentType: contentType(body)})
	if err != nil {
		return fmt.Errorf("%s: %w", displayName(*file), err)
	}
	var res apiv1.NamespaceImport
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("the server's answer: %w", err)
	}
	return e.emit(c, raw, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%d namespaces imported into cluster %q\n", res.Namespaces, *cluster)
		return err
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
	// The raw items too: NAME prints its own object for -o json.
	items, raw, err := listAll[json.RawMessage](e, cl, apiPath("tenants", tenant, "clusters", cluster, "namespaces"), nil)
	if err != nil {
		return err
	}
	nss, err := decodeItems[storedObject](items)
	if err != nil {
		return err
	}
	if name != "" {
		i := -1
		for j, ns := range nss {
			if ns.Metadata.Name == name {
				i = j
			}
		}
		if i < 0 {
			return fmt.Errorf("namespace %q is not in the inventory of cluster %q (upload it with `admin namespaces import`)", name, cluster)
		}
		nss, raw = nss[i:i+1], indentJSON(items[i])
	}
	return e.emit(c, raw, func(w io.Writer) error { return printNamespaces(w, e.now(), nss) })
}

func printNamespaces(w io.Writer, now time.Time, nss []storedObject) error {
	t := newTable(w, "NAME", "STATUS", "LABELS", "AGE")
	for _, ns := range nss {
		t.row(ns.Metadata.Name, ns.Status.Phase, labels(ns.Metadata.Labels), age(now, ns.Metadata.CreationTimestamp))
	}
	return t.flush()
}
