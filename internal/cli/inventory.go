package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiclient"
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
	raw, err := cl.do(e, apiclient.Request{Method: http.MethodPut, Path: apiPath("tenants", *tenant, "clusters", *cluster, k.resource),
		Body: body, ContentType: contentType(body)})
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

// inventoryGet is `admin get` of one kind of a cluster's inventory: all of
// it, or the object called name.
type inventoryGet[T any] struct {
	tenant, cluster, resource, name string
	nameOf                          func(T) string
	missing                         string // the error when name is not there
	print                           func(w io.Writer, now time.Time, items []T) error
}

func getInventory[T any](e *env, cl *client, c *connFlags, g inventoryGet[T]) error {
	// The raw items too: NAME prints its own object for -o json.
	items, raw, err := listAll[json.RawMessage](e, cl, apiPath("tenants", g.tenant, "clusters", g.cluster, g.resource), nil)
	if err != nil {
		return err
	}
	objs, err := decodeItems[T](items)
	if err != nil {
		return err
	}
	if g.name != "" {
		i := slices.IndexFunc(objs, func(o T) bool { return g.nameOf(o) == g.name })
		if i < 0 {
			return errors.New(g.missing)
		}
		objs, raw = objs[i:i+1], indentJSON(items[i])
	}
	return e.emit(c, raw, func(w io.Writer) error { return g.print(w, e.now(), objs) })
}
