package policystore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// Get returns the live object, or fault.NotFound.
func (s *Store) Get(ctx context.Context, tenantID int64, ref Ref) (*Object, error) {
	o, err := getObject(ctx, s.pool, tenantID, ref, false)
	if err != nil {
		return nil, err
	}
	if o == nil || o.Deleted {
		return nil, notFound(ref.GroupKind(), ref.Name)
	}
	return o, nil
}

// List returns the tenant's live objects that match opts, ordered by group,
// kind, namespace and name.
func (s *Store) List(ctx context.Context, tenantID int64, opts ListOptions) ([]*Object, error) {
	sel := labels.Everything()
	if opts.LabelSelector != "" {
		var err error
		sel, err = labels.Parse(opts.LabelSelector)
		if err != nil {
			return nil, invalidInput("invalid label selector: "+err.Error(),
				field.ErrorList{field.Invalid(field.NewPath("labelSelector"), opts.LabelSelector, err.Error())})
		}
	}
	rows, err := s.pool.Query(ctx, `SELECT `+objectColumns+` FROM policy_objects
		WHERE tenant_id = $1 AND NOT deleted
		  AND ($2 = '' OR api_group = $2) AND ($3 = '' OR kind = $3) AND ($4 = '' OR namespace = $4)
		ORDER BY api_group, kind, namespace, name`, tenantID, opts.Group, opts.Kind, opts.Namespace)
	if err != nil {
		return nil, err
	}
	objs, err := pgx.CollectRows(rows, scanObject)
	if err != nil {
		return nil, err
	}
	out := objs[:0]
	for _, o := range objs {
		if sel.Matches(labels.Set(o.Object.GetLabels())) {
			out = append(out, o)
		}
	}
	return out, nil
}

// History returns every version of the object, newest first, tombstones
// included; fault.NotFound if it never existed.
func (s *Store) History(ctx context.Context, tenantID int64, ref Ref) ([]*Version, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+versionColumns+` FROM policy_versions
		WHERE tenant_id = $1 AND api_group = $2 AND kind = $3 AND namespace = $4 AND name = $5
		ORDER BY version DESC`, tenantID, ref.Group, ref.Kind, ref.Namespace, ref.Name)
	if err != nil {
		return nil, err
	}
	vs, err := pgx.CollectRows(rows, scanVersion)
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		return nil, notFound(ref.GroupKind(), ref.Name)
	}
	return vs, nil
}

// GetVersion returns one version of the object, or fault.NotFound.
func (s *Store) GetVersion(ctx context.Context, tenantID int64, ref Ref, version int64) (*Version, error) {
	return getVersion(ctx, s.pool, tenantID, ref, version)
}

// TenantVersion returns the tenant's current policy version (0 if it has
// never written one).
func (s *Store) TenantVersion(ctx context.Context, tenantID int64) (int64, error) {
	var v int64
	err := s.pool.QueryRow(ctx, `SELECT version FROM policy_heads WHERE tenant_id = $1`, tenantID).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return v, err
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

const objectColumns = `api_group, kind, namespace, name, api_version, uid::text, version, generation, deleted, object, created_at, updated_at`

func scanObject(row pgx.CollectableRow) (*Object, error) {
	o := &Object{}
	var js []byte
	if err := row.Scan(&o.Group, &o.Kind, &o.Namespace, &o.Name, &o.APIVersion, &o.UID, &o.ResourceVersion,
		&o.Generation, &o.Deleted, &js, &o.CreatedAt, &o.UpdatedAt); err != nil {
		return nil, err
	}
	o.Object = &unstructured.Unstructured{}
	if err := o.Object.UnmarshalJSON(js); err != nil {
		return nil, fmt.Errorf("stored object %s: %w", o.Ref, err)
	}
	o.CreatedAt, o.UpdatedAt = o.CreatedAt.UTC(), o.UpdatedAt.UTC()
	return o, nil
}

// getObject returns the object's row, live or deleted, or nil.
func getObject(ctx context.Context, q querier, tenantID int64, ref Ref, forUpdate bool) (*Object, error) {
	sql := `SELECT ` + objectColumns + ` FROM policy_objects
		WHERE tenant_id = $1 AND api_group = $2 AND kind = $3 AND namespace = $4 AND name = $5`
	if forUpdate {
		sql += ` FOR UPDATE`
	}
	rows, err := q.Query(ctx, sql, tenantID, ref.Group, ref.Kind, ref.Namespace, ref.Name)
	if err != nil {
		return nil, err
	}
	o, err := pgx.CollectOneRow(rows, scanObject)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return o, err
}

const versionColumns = `api_group, kind, namespace, name, api_version, version, operation, author, created_at, coalesce(rollback_of, 0), object`

func scanVersion(row pgx.CollectableRow) (*Version, error) {
	v := &Version{}
	var js []byte
	if err := row.Scan(&v.Group, &v.Kind, &v.Namespace, &v.Name, &v.APIVersion, &v.Version, &v.Operation,
		&v.Author, &v.CreatedAt, &v.RollbackOf, &js); err != nil {
		return nil, err
	}
	v.CreatedAt = v.CreatedAt.UTC()
	if js != nil {
		v.Object = &unstructured.Unstructured{}
		if err := v.Object.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("stored version %d of %s: %w", v.Version, v.Ref, err)
		}
	}
	return v, nil
}

func getVersion(ctx context.Context, q querier, tenantID int64, ref Ref, version int64) (*Version, error) {
	rows, err := q.Query(ctx, `SELECT `+versionColumns+` FROM policy_versions
		WHERE tenant_id = $1 AND version = $2 AND api_group = $3 AND kind = $4 AND namespace = $5 AND name = $6`,
		tenantID, version, ref.Group, ref.Kind, ref.Namespace, ref.Name)
	if err != nil {
		return nil, err
	}
	v, err := pgx.CollectOneRow(rows, scanVersion)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &fault.Error{Code: fault.NotFound, Group: ref.Group, Kind: ref.Kind, Name: ref.Name,
			Message: fmt.Sprintf("version %d of %s not found", version, ref)}
	}
	return v, err
}

// StoredKind is a group and kind the tenant has stored. Live is false when
// every object of it is deleted (its history stays readable).
type StoredKind struct {
	schema.GroupKind
	Live bool
}

// Kinds returns every group and kind the tenant has stored, deleted
// objects included, sorted.
func (s *Store) Kinds(ctx context.Context, tenantID int64) ([]StoredKind, error) {
	rows, err := s.pool.Query(ctx, `SELECT api_group, kind, bool_or(NOT deleted) FROM policy_objects
		WHERE tenant_id = $1 GROUP BY api_group, kind ORDER BY api_group, kind`, tenantID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (StoredKind, error) {
		var k StoredKind
		err := row.Scan(&k.Group, &k.Kind, &k.Live)
		return k, err
	})
}
