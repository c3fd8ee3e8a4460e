package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiclient"
	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// inventoryKind is one kind of a cluster's inventory, which `admin
// RESOURCE import` replaces from a file and `admin get RESOURCE` shows:
// namespaces, CRDs.
type inventoryKind[T any] struct {
	resource string // the path segment under the cluster, and the CLI's noun
	one      string // what one object is, for "not in the inventory"
	objects  string // what -f holds, for its help
	noun     string // what the import's summary counts
	// imported reads the number imported from the server's answer.
	imported func(raw []byte) (int, error)
	nameOf   func(T) string
	print    func(w io.Writer, now time.Time, items []T) error
}

// count reads the number an import answer R holds, for imported.
func count[R any](n func(R) int) func(raw []byte) (int, error) {
	return func(raw []byte) (int, error) {
		var r R
		err := json.Unmarshal(raw, &r)
		return n(r), err
	}
}

// importInventory uploads -f to replace one kind of a cluster's inventory.
func importInventory[T any](e *env, args []string, k inventoryKind[T]) error {
	f := e.newFlags(k.resource + " import")
	c := f.conn(true)
	tenant, cluster := tenantFlag(f), clusterFlag(f)
	file := f.String("f", "", "`FILE` of "+k.objects+"; - reads stdin")
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
	raw, err := cl.do(e, apiclient.Request{Method: http.MethodPut, Path: apiPath("tenants", *tenant, "clusters", *cluster, k.resource),
		Body: body, ContentType: contentType(body)})
	if err != nil {
		return fmt.Errorf("%s: %w", displayName(*file), err)
	}
	n, err := k.imported(raw)
	if err != nil {
		return fmt.Errorf("the server's answer: %w", err)
	}
	return e.emit(c, raw, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%d %s imported into cluster %q\n", n, k.noun, *cluster)
		return err
	})
}

func contentType(body []byte) string {
	if t := strings.TrimSpace(string(body)); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		return "application/json"
	}
	return "application/yaml"
}

// getInventory is `admin get` of one kind of a cluster's inventory: all of
// it, or the object called name.
func getInventory[T any](e *env, cl *client, c *connFlags, k inventoryKind[T], tenant, cluster, name string) error {
	// The raw items too: NAME prints its own object for -o json.
	items, raw, err := listAll[json.RawMessage](e, cl, apiPath("tenants", tenant, "clusters", cluster, k.resource), nil)
	if err != nil {
		return err
	}
	objs, err := decodeItems[T](items)
	if err != nil {
		return err
	}
	if name != "" {
		i := slices.IndexFunc(objs, func(o T) bool { return k.nameOf(o) == name })
		if i < 0 {
			return fmt.Errorf("%s %q is not in the inventory of cluster %q (upload it with `admin %s import`)",
				k.one, name, cluster, k.resource)
		}
		objs, raw = objs[i:i+1], indentJSON(items[i])
	}
	return e.emit(c, raw, func(w io.Writer) error { return k.print(w, e.now(), objs) })
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
