package policystore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgnotify"
)

// Apply creates or updates the object in data (YAML or JSON). If the object
// carries metadata.resourceVersion, the write succeeds only if that is still
// the object's current version (fault.Conflict otherwise), so no update is lost.
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
		head, err := lockHead(ctx, tx, tenantID)
		if err != nil {
			return err
		}
		ws, _, err := s.writeAll(ctx, tx, tenantID, head, author, []writeItem{{d: d, rv: rv, op: OpCreate}}, "")
		if err != nil {
			return err
		}
		out = ws[0].obj
		if !ws[0].changed {
			// Nothing changes: give back the current object, as the
			// apiserver does for a no-op update, and write nothing.
			return errNoop{}
		}
		return nil
	})
	return out, err
}

// Delete writes a tombstone version for the object.
func (s *Store) Delete(ctx context.Context, tenantID int64, author string, ref Ref, opts DeleteOptions) (DeleteResult, error) {
	var out DeleteResult
	err := s.inTxDry(ctx, opts.DryRun, func(tx pgx.Tx) error {
		var err error
		out, err = s.deleteObject(ctx, tx, tenantID, author, ref, opts.ResourceVersion)
		return err
	})
	if err != nil {
		return DeleteResult{}, err
	}
	return out, nil
}

// deleteObject writes the tombstone of ref as the tenant's next version;
// rv, if not empty, is a precondition as in Apply.
func (s *Store) deleteObject(ctx context.Context, tx pgx.Tx, tenantID int64, author string, ref Ref, rv string) (DeleteResult, error) {
	version, err := s.bumpVersion(ctx, tx, tenantID)
	if err != nil {
		return DeleteResult{}, err
	}
	cur, err := getObject(ctx, tx, tenantID, ref, true)
	if err != nil {
		return DeleteResult{}, err
	}
	if cur == nil || cur.Deleted {
		return DeleteResult{}, notFound(ref.GroupKind(), ref.Name)
	}
	if err := checkPrecondition(cur, ref, rv); err != nil {
		return DeleteResult{}, err
	}
	now := time.Now().UTC()
	if _, err := tx.Exec(ctx, `UPDATE policy_objects SET deleted = true, version = $6, updated_at = $7
		WHERE tenant_id = $1 AND api_group = $2 AND kind = $3 AND namespace = $4 AND name = $5`,
		tenantID, ref.Group, ref.Kind, ref.Namespace, ref.Name, version, now); err != nil {
		return DeleteResult{}, err
	}
	tomb := &Version{Ref: ref, APIVersion: cur.APIVersion, Version: version, Operation: OpDelete,
		Author: author, CreatedAt: now}
	if err := insertVersion(ctx, tx, tenantID, tomb, nil); err != nil {
		return DeleteResult{}, err
	}
	return DeleteResult{Tombstone: tomb, VersionBefore: cur.ResourceVersion}, nil
}

// Rollback writes a new version of the object equal to its version
// opts.ToVersion. The expressions were accepted when that version was
// written, so they are not checked again against the NewExpressions
// environment; the snapshot loads them as stored expressions.
func (s *Store) Rollback(ctx context.Context, tenantID int64, author string, ref Ref, opts RollbackOptions) (RollbackResult, error) {
	var out RollbackResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// The head lock first, as in writeAll.
		head, err := lockHead(ctx, tx, tenantID)
		if err != nil {
			return err
		}
		old, err := getVersion(ctx, tx, tenantID, ref, opts.ToVersion)
		if err != nil {
			return err
		}
		if old.Object == nil {
			return invalid(ref.GroupKind(), ref.Name, field.ErrorList{field.Invalid(field.NewPath("version"), opts.ToVersion,
				"is a deletion; delete the object instead")})
		}
		obj := old.Object.DeepCopy()
		// The old version's own resourceVersion is history, not a
		// precondition; the caller's one is.
		obj.SetResourceVersion(opts.ResourceVersion)
		js, err := obj.MarshalJSON()
		if err != nil {
			return err
		}
		d, rv, err := decode(js)
		if err != nil {
			return err
		}
		ws, _, err := s.writeAll(ctx, tx, tenantID, head, author,
			[]writeItem{{d: d, rv: rv, op: OpRollback, rollbackOf: opts.ToVersion}}, "")
		if err != nil {
			return err
		}
		out.Object, out.VersionBefore = ws[0].obj, ws[0].before
		return nil
	})
	if err != nil {
		return RollbackResult{}, err
	}
	return out, nil
}

// errNoop aborts the transaction of a write that changes nothing.
type errNoop struct{}

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

// errDryRun rolls back a dry run's transaction once its results are known.
var errDryRun = errors.New("dry run")

// inTxDry runs fn in a transaction that is rolled back when dryRun, so
// that a dry run sees exactly what the write would have done.
func (s *Store) inTxDry(ctx context.Context, dryRun bool, fn func(pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		if dryRun {
			return errDryRun
		}
		return nil
	})
	if errors.Is(err, errDryRun) {
		return nil
	}
	return err
}

// lockHead locks the tenant's head row, creating it at version 0 on first
// use, and returns the current version.
func lockHead(ctx context.Context, tx pgx.Tx, tenantID int64) (int64, error) {
	var v int64
	err := tx.QueryRow(ctx, `INSERT INTO policy_heads AS h (tenant_id, version) VALUES ($1, 0)
		ON CONFLICT (tenant_id) DO UPDATE SET version = h.version
		RETURNING version`, tenantID).Scan(&v)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23503" { // foreign_key_violation
		return 0, fault.Wrap(err, fault.NotFound, "tenant %d not found", tenantID)
	}
	return v, err
}
