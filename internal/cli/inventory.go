package cli

import (
	"fmt"
	"io"
	"net/http"
)

// inventoryImport is one kind of a cluster's inventory that `admin ...
// import` replaces from a file: namespaces, CRDs.
type inventoryImport struct {
	command  string // "namespaces import"
	objects  string // what -f holds, for its help
	resource string // the path segment under the cluster
	noun     string // what the summary counts
	// count reads the number imported from the server's answer.
	count func(raw []byte) (int, error)
}

// importInventory uploads -f to replace one kind of a cluster's inventory.
func (e *env) importInventory(args []string, k inventoryImport) error {
	f := e.newFlags(k.command)
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
	raw, err := cl.do(e, request{method: http.MethodPut, path: apiPath("tenants", *tenant, "clusters", *cluster, k.resource),
		body: body, contentType: contentType(body)})
	if err != nil {
		return fmt.Errorf("%s: %w", displayName(*file), err)
	}
	n, err := k.count(raw)
	if err != nil {
		return fmt.Errorf("the server's answer: %w", err)
	}
	return e.emit(c, raw, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%d %s imported into cluster %q\n", n, k.noun, *cluster)
		return err
	})
}
