package policystore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-dev/portcullis/internal/pgnotify"
)

// writeItem is one object to write: the decoded object, the writer's
// resourceVersion precondition ("" for none) and the operation (OpCreate,
// which becomes OpUpdate for a live object, or OpRollback).
type writeItem struct {
	d          *decoded
	rv         string
	op         string
	rollbackOf int64
}

// written is what writeAll did with one item.
type written struct {
	// obj is the object as stored after the write; for an unchanged item,
	// the current object.
	obj *Object
	// before is the object's resourceVersion before the write, 0 when it
	// did not exist or was deleted.
	before  int64
	changed bool
}

// writeAll stores each item as its object's next version. It is the one
// write path of Apply, ApplyAll and Rollback. The caller holds the tenant's
// head lock (lockHead) and passes the head's version: writes of one tenant
// serialise on that lock, so versions are gap-free in commit order and a
// snapshot never mixes two. The same lock is why the objects' rows are
// read without FOR UPDATE: every writer of policy_objects takes it first.
//
// The changed items take consecutive versions after head, in item order,
// exactly as if they were written one by one; an unchanged item (same
// content, not a rollback) writes nothing and keeps its version, as the
// apiserver does for a no-op update. The head then moves once, to the last
// version, with one notification. Whatever the number of items, this is a
// fixed number of statements: one read of the current rows, one upsert of
// the objects, one insert of the versions and one head update. (One
// statement, savepoint and head upsert per object made an apply quadratic:
// 1,000 objects took 2.7 s, 2,000 took 10.5 s.)
//
// The first item refused (a failed resourceVersion precondition) fails the
// call; with list set, its message says which item, as list[i]. The new
// head version comes back with the results.
func (s *Store) writeAll(ctx context.Context, tx pgx.Tx, tenantID, head int64, author string, items []writeItem, list string) ([]written, int64, error) {
	refs := make([]Ref, len(items))
	for i, it := range items {
		refs[i] = it.d.ref
	}
	cur, err := getObjects(ctx, tx, tenantID, refs)
	if err != nil {
		return nil, 0, err
	}
	out := make([]written, len(items))
	var rows batchRows
	version := head
	now := time.Now().UTC().Truncate(time.Second)
	for i, it := range items {
		w, err := nextVersion(cur[it.d.ref], it, version+1, now)
		if err != nil {
			if list != "" {
				err = inDocument(err, list, i)
			}
			return nil, 0, err
		}
		out[i] = w
		if !w.changed {
			continue
		}
		version++
		js, err := w.obj.Object.MarshalJSON()
		if err != nil {
			return nil, 0, err
		}
		op := it.op
		if op == OpCreate && w.before != 0 {
			op = OpUpdate
		}
		rows.add(w.obj, op, it.rollbackOf, string(js))
	}
	if version == head {
		return out, head, nil
	}
	if err := rows.insert(ctx, tx, tenantID, author, now); err != nil {
		return nil, 0, err
	}
	if _, err := tx.Exec(ctx, `UPDATE policy_heads SET version = $2, updated_at = now() WHERE tenant_id = $1`,
		tenantID, version); err != nil {
		return nil, 0, err
	}
	return out, version, pgnotify.Notify(ctx, tx, ChannelPolicies, fmt.Sprintf("%d:%d", tenantID, version))
}

// nextVersion is what writing it over cur (nil when the object never
// existed) gives, as the given version.
func nextVersion(cur *Object, it writeItem, version int64, now time.Time) (written, error) {
	ref := it.d.ref
	live := cur != nil && !cur.Deleted
	var w written
	if live {
		w.before = cur.ResourceVersion
	}
	if it.rv != "" {
		if !live {
			return w, conflict(ref.GroupKind(), ref.Name,
				"the object has been deleted or does not exist; remove metadata.resourceVersion to create it")
		}
		if err := checkPrecondition(cur, ref, it.rv); err != nil {
			return w, err
		}
	}
	if live && it.op != OpRollback && sameContent(cur, it.d) {
		w.obj = cur
		return w, nil
	}
	obj := it.d.obj
	uid, generation, created := uuid.NewString(), int64(1), now
	if live {
		uid, generation, created = cur.UID, cur.Generation+1, cur.CreatedAt
	}
	obj.SetUID(typesUID(uid))
	obj.SetResourceVersion(strconv.FormatInt(version, 10))
	obj.SetGeneration(generation)
	obj.SetCreationTimestamp(metav1.NewTime(created))
	w.changed = true
	w.obj = &Object{Ref: ref, APIVersion: it.d.gvk.GroupVersion().String(), ResourceVersion: version, UID: uid,
		Generation: generation, CreatedAt: created, UpdatedAt: now, Object: obj}
	return w, nil
}

// getObjects returns the rows, live or deleted, of those of refs that
// exist, in one query.
func getObjects(ctx context.Context, q querier, tenantID int64, refs []Ref) (map[Ref]*Object, error) {
	var c refColumns
	for _, r := range refs {
		c.add(r)
	}
	rows, err := q.Query(ctx, `SELECT `+objectColumns+` FROM policy_objects
		WHERE tenant_id = $1 AND (api_group, kind, namespace, name) IN
		  (SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]))`,
		tenantID, c.groups, c.kinds, c.namespaces, c.names)
	if err != nil {
		return nil, err
	}
	objs, err := pgx.CollectRows(rows, scanObject)
	if err != nil {
		return nil, err
	}
	out := make(map[Ref]*Object, len(objs))
	for _, o := range objs {
		out[o.Ref] = o
	}
	return out, nil
}

// refColumns are refs as columns, for unnest.
type refColumns struct{ groups, kinds, namespaces, names []string }

func (c *refColumns) add(r Ref) {
	c.groups = append(c.groups, r.Group)
	c.kinds = append(c.kinds, r.Kind)
	c.namespaces = append(c.namespaces, r.Namespace)
	c.names = append(c.names, r.Name)
}

// batchRows are the rows of the changed objects and of their versions, as
// columns: each table takes them in one statement.
type batchRows struct {
	refColumns
	apiVersions, uids, operations, objects []string
	versions, generations                  []int64
	created                                []time.Time
	rollbackOf                             []*int64
}

func (b *batchRows) add(o *Object, op string, rollbackOf int64, js string) {
	b.refColumns.add(o.Ref)
	b.apiVersions = append(b.apiVersions, o.APIVersion)
	b.uids = append(b.uids, o.UID)
	b.operations = append(b.operations, op)
	b.objects = append(b.objects, js)
	b.versions = append(b.versions, o.ResourceVersion)
	b.generations = append(b.generations, o.Generation)
	b.created = append(b.created, o.CreatedAt)
	var rb *int64
	if op == OpRollback {
		rb = &rollbackOf
	}
	b.rollbackOf = append(b.rollbackOf, rb)
}

func (b *batchRows) insert(ctx context.Context, tx pgx.Tx, tenantID int64, author string, now time.Time) error {
	if _, err := tx.Exec(ctx, `INSERT INTO policy_objects
		(tenant_id, api_group, kind, namespace, name, api_version, uid, version, generation, deleted, object, created_at, updated_at)
		SELECT $1, g, k, ns, n, av, uid::uuid, v, gen, false, obj::jsonb, c, $12
		FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int8[], $9::int8[],
		            $10::text[], $11::timestamptz[]) AS t(g, k, ns, n, av, uid, v, gen, obj, c)
		ON CONFLICT (tenant_id, api_group, kind, namespace, name) DO UPDATE SET
		  api_version = EXCLUDED.api_version, uid = EXCLUDED.uid, version = EXCLUDED.version,
		  generation = EXCLUDED.generation, deleted = false, object = EXCLUDED.object,
		  created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at`,
		tenantID, b.groups, b.kinds, b.namespaces, b.names, b.apiVersions, b.uids, b.versions, b.generations,
		b.objects, b.created, now); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO policy_versions
		(tenant_id, version, api_group, kind, namespace, name, api_version, operation, object, author, created_at, rollback_of)
		SELECT $1, v, g, k, ns, n, av, op, obj::jsonb, $10, $11, rb
		FROM unnest($2::int8[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
		            $12::int8[]) AS t(v, g, k, ns, n, av, op, obj, rb)`,
		tenantID, b.versions, b.groups, b.kinds, b.namespaces, b.names, b.apiVersions, b.operations, b.objects,
		author, now, b.rollbackOf); err != nil {
		return err
	}
	return nil
}
