package api

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

// clusterInventory is one kind of a cluster's inventory that the API lists
// and replaces whole: namespaces, CRDs.
type clusterInventory[T any] struct {
	list    func(ctx context.Context, tenantID, clusterID int64) ([]T, error)
	replace func(ctx context.Context, tenantID, clusterID int64, items []T) error
	name    func(T) string
	encode  func(T) (json.RawMessage, error)
	// split reads the upload's objects; decode reads the i-th, refusing
	// one of another kind.
	split  func(body []byte, list string) ([][]byte, error)
	decode func(i int, js []byte) (T, error)
	// The audit entry's kind and the key of its count, and the answer.
	auditKind, counted string
	answer             func(n int) any
}

// listClusterInventory answers GET of one kind of a cluster's inventory.
func listClusterInventory[T any](s *Server, c *call, k clusterInventory[T]) error {
	cl, err := s.cluster(c)
	if err != nil {
		return err
	}
	items, err := k.list(c.ctx(), c.tenant.ID, cl.ID)
	if err != nil {
		return err
	}
	return listInventory(c, items, k.name, k.encode)
}

// importClusterInventory answers PUT of one kind of a cluster's
// inventory: it replaces the whole of it with the upload.
func importClusterInventory[T any](s *Server, c *call, k clusterInventory[T]) error {
	cl, objs, err := s.inventoryUpload(c, k.split)
	if err != nil {
		return err
	}
	items := make([]T, len(objs))
	for i, js := range objs {
		if items[i], err = k.decode(i, js); err != nil {
			return err
		}
	}
	if err := k.replace(c.ctx(), c.tenant.ID, cl.ID, items); err != nil {
		return err
	}
	c.audit(auditlog.Entry{Action: "import", Kind: k.auditKind, Name: cl.Name,
		Detail: map[string]any{"cluster": cl.Name, k.counted: len(items)}})
	return c.json(k.answer(len(items)))
}

// listInventory answers one page of a cluster's inventory objects, in
// name order.
func listInventory[T any](c *call, items []T, name func(T) string, encode func(T) (json.RawMessage, error)) error {
	// The database sorts by its collation; paging compares bytes.
	slices.SortFunc(items, func(a, b T) int { return strings.Compare(name(a), name(b)) })
	p, err := page(c, items, name)
	if err != nil {
		return err
	}
	out := apiv1.List[json.RawMessage]{Items: make([]json.RawMessage, len(p.Items)), Continue: p.Continue}
	for i, item := range p.Items {
		if out.Items[i], err = encode(item); err != nil {
			return err
		}
	}
	return c.json(out)
}

// inventoryUpload is the cluster of an inventory upload (PUT of a List or
// multi-document YAML) and its objects, items[i] each, as split reads them.
func (s *Server) inventoryUpload(c *call, split func(body []byte, list string) ([][]byte, error)) (tenancy.Cluster, [][]byte, error) {
	cl, err := s.cluster(c)
	if err != nil {
		return tenancy.Cluster{}, nil, err
	}
	body, err := c.body()
	if err != nil {
		return tenancy.Cluster{}, nil, err
	}
	objs, err := split(body, "items")
	return cl, objs, err
}
