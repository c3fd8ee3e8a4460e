// Package policystore keeps each tenant's admission policy objects in
// Postgres, with every version, and serves compiled snapshots of them from
// memory to the webhook (see Cache).
//
// Every store method takes the tenant ID first and scopes every query by it;
// a method that reads across tenants says All in its name. Public methods own
// their transaction; private helpers take it.
package policystore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgnotify"
)

// Notification channels. Payloads are "<tenant>:<version>" for policies and
// "<tenant>:<cluster>:<namespace>" (namespace "" after an upload) for the
// namespace inventory.
const (
	ChannelPolicies   = "portcullis_policies"
	ChannelNamespaces = "portcullis_namespaces"
)

// Store reads and writes policy objects and namespace inventories.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Object is the current state of one stored object.
type Object struct {
	Ref
	APIVersion string
	// ResourceVersion is the tenant version of the object's last write; it
	// is also metadata.resourceVersion (as a decimal string) in Object.
	ResourceVersion int64
	UID             string
	Generation      int64
	Deleted         bool
	CreatedAt       time.Time
	UpdatedAt       time.Time
	// Object is the full stored object, server metadata included.
	Object *unstructured.Unstructured
}

// Operations recorded in a Version.
const (
	OpCreate   = "create"
	OpUpdate   = "update"
	OpDelete   = "delete"
	OpRollback = "rollback"
)

// Version is one immutable entry in an object's history.
type Version struct {
	Ref
	APIVersion string
	Version    int64
	Operation  string // OpCreate, OpUpdate, OpDelete (a tombstone) or OpRollback
	Author     string
	CreatedAt  time.Time
	RollbackOf int64 // the version restored, for OpRollback
	// Object is the object as written by this version; nil for a tombstone.
	Object *unstructured.Unstructured
}

// ListOptions filters List. Empty fields match everything.
type ListOptions struct {
	Group     string
	Kind      string
	Namespace string
	// LabelSelector uses the Kubernetes label selector syntax.
	LabelSelector string
}

// Apply creates or updates the object in data (YAML or JSON). If the object
// carries metadata.resourceVersion, the write succeeds only if that is still
// the object's current version (ECONFLICT otherwise), so no update is lost.
// An apply that changes nothing returns the current object and writes no
// version.
func (s *Store) Apply(ctx context.Context, tenantID int64, author string, data []byte) (*Object, error) {
	d, rv, err := decode(data)
	if err != nil {
		return nil, err
	}
	if errs := checkExpressions(d); len(errs) > 0 {
		return nil, invalid(d.gvk.GroupKind(), d.ref.Name, errs)
	}
	var out *Object
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		out, _, err = s.write(ctx, tx, tenantID, author, d, rv, OpCreate, 0)
		return err
	})
	return out, err
}

// Delete writes a tombstone version for the object. resourceVersion, if not
// empty, is a precondition as in Apply.
func (s *Store) Delete(ctx context.Context, tenantID int64, author string, ref Ref, resourceVersion string) (*Version, error) {
	v, _, err := s.DeleteObject(ctx, tenantID, author, ref, resourceVersion, false)
	return v, err
}

// DeleteObject is Delete, returning also the object's resourceVersion
// before the deletion. With dryRun everything is checked in the same
// transaction, which is then rolled back: the tombstone returned is the one
// a real delete would have written.
func (s *Store) DeleteObject(ctx context.Context, tenantID int64, author string, ref Ref, resourceVersion string, dryRun bool) (*Version, int64, error) {
	var (
		out    *Version
		before int64
	)
	err := s.inTxDry(ctx, dryRun, func(tx pgx.Tx) error {
		version, err := s.bumpVersion(ctx, tx, tenantID)
		if err != nil {
			return err
		}
		cur, err := getObject(ctx, tx, tenantID, ref, true)
		if err != nil {
			return err
		}
		if cur == nil || cur.Deleted {
			return notFound(ref.GroupKind(), ref.Name)
		}
		if err := checkPrecondition(cur, ref, resourceVersion); err != nil {
			return err
		}
		before = cur.ResourceVersion
		now := time.Now().UTC()
		if _, err := tx.Exec(ctx, `UPDATE policy_objects SET deleted = true, version = $6, updated_at = $7
			WHERE tenant_id = $1 AND api_group = $2 AND kind = $3 AND namespace = $4 AND name = $5`,
			tenantID, ref.Group, ref.Kind, ref.Namespace, ref.Name, version, now); err != nil {
			return err
		}
		out = &Version{Ref: ref, APIVersion: cur.APIVersion, Version: version, Operation: OpDelete,
			Author: author, CreatedAt: now}
		return insertVersion(ctx, tx, tenantID, out, nil)
	})
	if err != nil {
		return nil, 0, err
	}
	return out, before, nil
}

// Rollback writes a new version of the object equal to its version
// toVersion (which must not be a tombstone). The expressions were accepted
// when that version was written, so they are not checked again against the
// NewExpressions environment; the snapshot loads them as stored expressions.
func (s *Store) Rollback(ctx context.Context, tenantID int64, author string, ref Ref, toVersion int64, resourceVersion string) (*Object, error) {
	o, _, err := s.RollbackObject(ctx, tenantID, author, ref, toVersion, resourceVersion)
	return o, err
}

// RollbackObject is Rollback, returning also the object's resourceVersion
// before the rollback (0 if it was deleted).
func (s *Store) RollbackObject(ctx context.Context, tenantID int64, author string, ref Ref, toVersion int64, resourceVersion string) (*Object, int64, error) {
	var (
		out    *Object
		before int64
	)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// The head lock first, as in write.
		if _, err := lockHead(ctx, tx, tenantID); err != nil {
			return err
		}
		old, err := getVersion(ctx, tx, tenantID, ref, toVersion)
		if err != nil {
			return err
		}
		if old.Object == nil {
			return invalid(ref.GroupKind(), ref.Name, field.ErrorList{field.Invalid(field.NewPath("version"), toVersion,
				"is a deletion; delete the object instead")})
		}
		obj := old.Object.DeepCopy()
		// The old version's own resourceVersion is history, not a
		// precondition; the caller's one is.
		obj.SetResourceVersion(resourceVersion)
		js, err := obj.MarshalJSON()
		if err != nil {
			return err
		}
		d, rv, err := decode(js)
		if err != nil {
			return err
		}
		out, before, err = s.write(ctx, tx, tenantID, author, d, rv, OpRollback, toVersion)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return out, before, nil
}

// Get returns the live object, or ENOTFOUND.
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
// included. ENOTFOUND if it never existed.
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

// GetVersion returns one version of the object, or ENOTFOUND.
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

// write stores d as the object's next version. It is Apply's and Rollback's
// common path.
//
// before is the object's resourceVersion before the write, 0 when it did not
// exist or was deleted.
func (s *Store) write(ctx context.Context, tx pgx.Tx, tenantID int64, author string, d *decoded, rv, op string, rollbackOf int64) (_ *Object, before int64, _ error) {
	ref := d.ref
	// Lock the tenant's head first: writes of one tenant serialise here, so
	// versions are gap-free in commit order and a snapshot never mixes two.
	version, err := s.bumpVersion(ctx, tx, tenantID)
	if err != nil {
		return nil, 0, err
	}
	cur, err := getObject(ctx, tx, tenantID, ref, true)
	if err != nil {
		return nil, 0, err
	}
	live := cur != nil && !cur.Deleted
	if live {
		before = cur.ResourceVersion
	}
	if rv != "" {
		if !live {
			return nil, 0, conflict(ref.GroupKind(), ref.Name,
				"the object has been deleted or does not exist; remove metadata.resourceVersion to create it")
		}
		if err := checkPrecondition(cur, ref, rv); err != nil {
			return nil, 0, err
		}
	}
	if live && op != OpRollback && sameContent(cur, d) {
		// Nothing changes: give back the current object, as the apiserver
		// does for a no-op update, and release the version bump.
		return cur, before, errNoop{cur}
	}
	now := time.Now().UTC().Truncate(time.Second)
	obj := d.obj
	uid, generation, created := uuid.NewString(), int64(1), now
	if live {
		uid, generation, created = cur.UID, cur.Generation+1, cur.CreatedAt
		if op == OpCreate {
			op = OpUpdate
		}
	}
	obj.SetUID(typesUID(uid))
	obj.SetResourceVersion(strconv.FormatInt(version, 10))
	obj.SetGeneration(generation)
	obj.SetCreationTimestamp(metav1.NewTime(created))
	js, err := obj.MarshalJSON()
	if err != nil {
		return nil, 0, err
	}
	apiVersion := d.gvk.GroupVersion().String()
	if _, err := tx.Exec(ctx, `INSERT INTO policy_objects
		(tenant_id, api_group, kind, namespace, name, api_version, uid, version, generation, deleted, object, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, false, $10, $11, $12)
		ON CONFLICT (tenant_id, api_group, kind, namespace, name) DO UPDATE SET
		  api_version = EXCLUDED.api_version, uid = EXCLUDED.uid, version = EXCLUDED.version,
		  generation = EXCLUDED.generation, deleted = false, object = EXCLUDED.object,
		  created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at`,
		tenantID, ref.Group, ref.Kind, ref.Namespace, ref.Name, apiVersion, uid, version, generation, js, created, now); err != nil {
		return nil, 0, err
	}
	v := &Version{Ref: ref, APIVersion: apiVersion, Version: version, Operation: op, Author: author,
		CreatedAt: now, RollbackOf: rollbackOf}
	if err := insertVersion(ctx, tx, tenantID, v, js); err != nil {
		return nil, 0, err
	}
	return &Object{Ref: ref, APIVersion: apiVersion, ResourceVersion: version, UID: uid, Generation: generation,
		CreatedAt: created, UpdatedAt: now, Object: obj}, before, nil
}

// errNoop aborts the transaction of a write that changes nothing.
type errNoop struct{ obj *Object }

func (errNoop) Error() string { return "no change" }

func sameContent(cur *Object, d *decoded) bool {
	if cur.APIVersion != d.gvk.GroupVersion().String() {
		return false
	}
	a := cur.Object.DeepCopy()
	for _, f := range serverMetadata {
		unstructured.RemoveNestedField(a.Object, "metadata", f)
	}
	if d.typed != nil {
		delete(a.Object, "status")
	}
	return reflect.DeepEqual(a.Object, d.obj.Object)
}

func checkPrecondition(cur *Object, ref Ref, rv string) error {
	if rv == "" {
		return nil
	}
	if rv != strconv.FormatInt(cur.ResourceVersion, 10) {
		return conflict(ref.GroupKind(), ref.Name, "the object has been modified; please apply your changes to the latest version and try again")
	}
	return nil
}

// bumpVersion increments the tenant's policy version, creating its head row
// on first use, and queues the change notification (sent at commit). The row
// stays locked until the transaction ends.
func (s *Store) bumpVersion(ctx context.Context, tx pgx.Tx, tenantID int64) (int64, error) {
	var v int64
	err := tx.QueryRow(ctx, `INSERT INTO policy_heads AS h (tenant_id, version) VALUES ($1, 1)
		ON CONFLICT (tenant_id) DO UPDATE SET version = h.version + 1, updated_at = now()
		RETURNING version`, tenantID).Scan(&v)
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23503" { // foreign_key_violation
			return 0, fault.Errorf(fault.NotFound, "tenant %d not found", tenantID)
		}
		return 0, err
	}
	return v, pgnotify.Notify(ctx, tx, ChannelPolicies, fmt.Sprintf("%d:%d", tenantID, v))
}

func insertVersion(ctx context.Context, tx pgx.Tx, tenantID int64, v *Version, js []byte) error {
	var rollbackOf *int64
	if v.Operation == OpRollback {
		rollbackOf = &v.RollbackOf
	}
	var obj any
	if js != nil {
		obj = js
	}
	_, err := tx.Exec(ctx, `INSERT INTO policy_versions
		(tenant_id, version, api_group, kind, namespace, name, api_version, operation, object, author, created_at, rollback_of)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		tenantID, v.Version, v.Group, v.Kind, v.Namespace, v.Name, v.APIVersion, v.Operation, obj, v.Author, v.CreatedAt, rollbackOf)
	if err == nil && js != nil {
		v.Object = &unstructured.Unstructured{}
		err = v.Object.UnmarshalJSON(js)
	}
	return err
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

// inTx runs fn in a transaction and commits it unless fn fails. An errNoop
// rolls back and is not an error.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, s.pool, fn)
	var noop errNoop
	if errors.As(err, &noop) {
		return nil
	}
	return err
}

// liveObjects reads the tenant's version and all its live objects in one
// repeatable-read transaction, so the two always agree.
func (s *Store) liveObjects(ctx context.Context, tenantID int64) (int64, []*unstructured.Unstructured, int, error) {
	var (
		version int64
		objs    []*unstructured.Unstructured
		size    int
	)
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT version FROM policy_heads WHERE tenant_id = $1`, tenantID).Scan(&version)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT object FROM policy_objects WHERE tenant_id = $1 AND NOT deleted
			ORDER BY api_group, kind, namespace, name`, tenantID)
		if err != nil {
			return err
		}
		var js []byte
		_, err = pgx.ForEachRow(rows, []any{&js}, func() error {
			size += len(js)
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(js); err != nil {
				return err
			}
			objs = append(objs, u)
			return nil
		})
		return err
	})
	return version, objs, size, err
}

// headVersionsAll returns the current policy version of each given tenant;
// tenants that never wrote a policy are absent (version 0).
func (s *Store) headVersionsAll(ctx context.Context, tenantIDs []int64) (map[int64]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT tenant_id, version FROM policy_heads WHERE tenant_id = ANY($1)`, tenantIDs)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]int64, len(tenantIDs))
	var t, v int64
	_, err = pgx.ForEachRow(rows, []any{&t, &v}, func() error { out[t] = v; return nil })
	return out, err
}

// touchServedAll records that the given tenants were served recently, at a
// five-minute grain so that replicas do not write on every resync.
func (s *Store) touchServedAll(ctx context.Context, tenantIDs []int64) error {
	if len(tenantIDs) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO policy_heads AS h (tenant_id, last_served_at)
		SELECT t.id, now() FROM tenants t WHERE t.id = ANY($1)
		ON CONFLICT (tenant_id) DO UPDATE SET last_served_at = now()
		WHERE h.last_served_at IS NULL OR h.last_served_at < now() - interval '5 minutes'`, tenantIDs)
	return err
}

// RecentTenantsAll returns up to limit tenants served within the window,
// most recent first: the ones a starting replica warms up.
func (s *Store) RecentTenantsAll(ctx context.Context, window time.Duration, limit int) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT tenant_id FROM policy_heads
		WHERE last_served_at > now() - make_interval(secs => $1)
		ORDER BY last_served_at DESC LIMIT $2`, window.Seconds(), limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}
