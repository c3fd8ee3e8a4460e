package inventory

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Every replica serving a cluster holds its whole inventory in memory, so
// what one cluster may store is bounded, in size and in number.
const (
	// MaxNamespaceBytes bounds one stored Namespace, as JSON, after
	// managedFields and lastAppliedAnnotation are stripped. The apiserver
	// itself refuses more than 256 KiB of annotations
	// (apivalidation.TotalAnnotationSizeLimitB); labels, finalizers and
	// status take little beside them.
	MaxNamespaceBytes = 512 << 10

	// DefaultMaxNamespaces and DefaultMaxCRDs are the per-cluster bounds
	// when the tenant has no override. Kubernetes itself is tested to
	// 10,000 namespaces per cluster.
	DefaultMaxNamespaces = 10_000
	DefaultMaxCRDs       = 1_000
)

// lastAppliedAnnotation is kubectl's copy of the whole object as last
// applied: up to the size of the object again, and read by no selector
// (a namespaceSelector reads labels only). It is not stored.
const lastAppliedAnnotation = corev1.LastAppliedConfigAnnotation

// Bounds are how many namespaces (committed and provisional together) and
// CRDs one cluster's inventory holds at most.
type Bounds struct {
	Namespaces, CRDs int
}

// SetDefaultBounds sets the bounds of tenants without an override; zero
// fields keep DefaultMaxNamespaces and DefaultMaxCRDs.
func (s *Store) SetDefaultBounds(b Bounds) {
	if b.Namespaces > 0 {
		s.defaults.Namespaces = b.Namespaces
	}
	if b.CRDs > 0 {
		s.defaults.CRDs = b.CRDs
	}
}

// DefaultBounds returns the bounds of tenants without an override.
func (s *Store) DefaultBounds() Bounds { return s.defaultBounds() }

// Bounds returns the tenant's per-cluster bounds: its overrides
// (tenant_limits.max_namespaces_per_cluster, max_crds_per_cluster, which
// internal/limits writes) over the defaults. Every write reads them again
// in its own transaction, so a changed override holds from the next
// write on, on every replica, with no cache to notify.
func (s *Store) Bounds(ctx context.Context, tenantID int64) (Bounds, error) {
	return s.bounds(ctx, s.pool, tenantID)
}

type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (s *Store) bounds(ctx context.Context, q queryRower, tenantID int64) (Bounds, error) {
	b := s.defaultBounds()
	var ns, crds int
	err := q.QueryRow(ctx, `SELECT coalesce(max_namespaces_per_cluster, 0), coalesce(max_crds_per_cluster, 0)
		FROM tenant_limits WHERE tenant_id = $1`, tenantID).Scan(&ns, &crds)
	if errors.Is(err, pgx.ErrNoRows) {
		return b, nil
	}
	if err != nil {
		return Bounds{}, err
	}
	if ns > 0 {
		b.Namespaces = ns
	}
	if crds > 0 {
		b.CRDs = crds
	}
	return b, nil
}

func (s *Store) defaultBounds() Bounds {
	b := s.defaults
	if b.Namespaces <= 0 {
		b.Namespaces = DefaultMaxNamespaces
	}
	if b.CRDs <= 0 {
		b.CRDs = DefaultMaxCRDs
	}
	return b
}

// tooMany is the 422 of a write that would leave the cluster with more
// objects than its bound.
func tooMany(gk schema.GroupKind, at *field.Path, n, bound int, what string) error {
	return invalid(gk, "", field.ErrorList{field.Invalid(at, n,
		fmt.Sprintf("the cluster would hold %d %s, over its bound of %d (the tenant's limit, or the gateway's default)", n, what, bound))})
}

// stripNamespace removes from c what no selector reads and what the
// inventory does not keep: managedFields and kubectl's last-applied copy.
func stripNamespace(c *corev1.Namespace) {
	c.ManagedFields = nil
	if _, ok := c.Annotations[lastAppliedAnnotation]; ok {
		delete(c.Annotations, lastAppliedAnnotation)
		if len(c.Annotations) == 0 {
			c.Annotations = nil
		}
	}
}

// checkNamespaceSize returns the field errors of a namespace over the
// apiserver's bounds on labels and annotations, or over MaxNamespaceBytes
// as stored (js).
func checkNamespaceSize(c *corev1.Namespace, js []byte) field.ErrorList {
	md := field.NewPath("metadata")
	errs := metav1validation.ValidateLabels(c.Labels, md.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(c.Annotations, md.Child("annotations"))...)
	if len(errs) == 0 && len(js) > MaxNamespaceBytes {
		// The whole object: its path is the root (items[i] in a list).
		errs = append(errs, &field.Error{Type: field.ErrorTypeTooLong, BadValue: field.OmitValueType{},
			Detail: fmt.Sprintf("the namespace is %d bytes as stored, over the inventory's bound of %d", len(js), MaxNamespaceBytes)})
	}
	return errs
}

// under prefixes the paths of errs with at (a field of a list).
func under(at *field.Path, errs field.ErrorList) field.ErrorList {
	for _, e := range errs {
		if e.Field == "" {
			e.Field = at.String()
		} else {
			e.Field = at.String() + "." + e.Field
		}
	}
	return errs
}

// olderVersion reports whether a's resourceVersion is known to be older
// than b's. Resource versions are opaque to clients, but the apiserver's
// (etcd's) are increasing integers: when both parse, they are compared;
// otherwise nothing is known and a is not older.
func olderVersion(a, b string) bool {
	av, err1 := strconv.ParseUint(a, 10, 64)
	bv, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && av < bv
}

// errOverBound is Store.Observe's error for a namespace new to a cluster
// that holds as many as its bound allows: a learned namespace is dropped
// (and counted) then, never an error a caller sees.
var errOverBound = errors.New("the cluster's inventory holds as many namespaces as its bound allows")

// namespaceCount returns how many names the cluster's committed and
// provisional namespaces hold together, and whether name is among them.
func namespaceCount(ctx context.Context, q queryRower, tenantID, clusterID int64, name string) (n int, known bool, err error) {
	err = q.QueryRow(ctx, `SELECT count(*), coalesce(bool_or(name = $3), false) FROM (
			SELECT name FROM cluster_namespaces WHERE tenant_id = $1 AND cluster_id = $2
			UNION SELECT name FROM cluster_namespaces_provisional WHERE tenant_id = $1 AND cluster_id = $2) AS u`,
		tenantID, clusterID, name).Scan(&n, &known)
	return n, known, err
}
