package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgnotify"
	"github.com/portcullis-dev/portcullis/internal/pgtext"
)

var kindNamespace = corev1.SchemeGroupVersion.WithKind("Namespace").GroupKind()

// cleanNamespace copies ns without managedFields and kubectl's
// last-applied annotation, with its type meta set, and checks its name and
// size (bounds.go).
func cleanNamespace(ns *corev1.Namespace) (*corev1.Namespace, []byte, error) {
	c, js, errs, err := checkNamespace(ns)
	if len(errs) > 0 {
		name := ""
		if ns != nil {
			name = ns.Name
		}
		return nil, nil, invalid(kindNamespace, name, errs)
	}
	return c, js, err
}

// checkNamespace is cleanNamespace, returning the field errors of a bad
// namespace instead of an error.
func checkNamespace(ns *corev1.Namespace) (*corev1.Namespace, []byte, field.ErrorList, error) {
	if ns == nil || ns.Name == "" {
		return nil, nil, field.ErrorList{field.Required(field.NewPath("metadata", "name"), "")}, nil
	}
	if msgs := validation.IsDNS1123Label(ns.Name); len(msgs) > 0 {
		return nil, nil, field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), ns.Name, strings.Join(msgs, "; "))}, nil
	}
	c := ns.DeepCopy()
	stripNamespace(c)
	c.APIVersion, c.Kind = "v1", "Namespace"
	js, err := json.Marshal(c)
	if err != nil {
		return nil, nil, nil, err
	}
	if errs := checkNamespaceSize(c, js); len(errs) > 0 {
		return nil, nil, errs, nil
	}
	errs, err := pgtext.JSONErrors(js)
	if err != nil || len(errs) > 0 {
		return nil, nil, errs, err
	}
	return c, js, nil, nil
}

// GetNamespace returns one namespace of the cluster's inventory.
func (s *Store) GetNamespace(ctx context.Context, tenantID, clusterID int64, name string) (*corev1.Namespace, error) {
	return s.getNamespace(ctx, tenantID, clusterID, committedTable, name)
}

// ListNamespaces returns the cluster's inventory, by name.
func (s *Store) ListNamespaces(ctx context.Context, tenantID, clusterID int64) ([]*corev1.Namespace, error) {
	return s.listNamespaces(ctx, tenantID, clusterID, committedTable)
}

// The tables of committed and of provisional namespaces have the same
// columns; these name them in the queries below (constants, never input).
const (
	committedTable   = "cluster_namespaces"
	provisionalTable = "cluster_namespaces_provisional"
)

func (s *Store) getNamespace(ctx context.Context, tenantID, clusterID int64, table, name string) (*corev1.Namespace, error) {
	var js []byte
	err := s.pool.QueryRow(ctx, `SELECT object FROM `+table+` WHERE tenant_id = $1 AND cluster_id = $2 AND name = $3`,
		tenantID, clusterID, name).Scan(&js)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound(kindNamespace, name)
	}
	if err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{}
	return ns, json.Unmarshal(js, ns)
}

func (s *Store) listNamespaces(ctx context.Context, tenantID, clusterID int64, table string) ([]*corev1.Namespace, error) {
	rows, err := s.pool.Query(ctx, `SELECT object FROM `+table+` WHERE tenant_id = $1 AND cluster_id = $2 ORDER BY name`,
		tenantID, clusterID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*corev1.Namespace, error) {
		var js []byte
		if err := row.Scan(&js); err != nil {
			return nil, err
		}
		ns := &corev1.Namespace{}
		return ns, json.Unmarshal(js, ns)
	})
}

// notSynced is the condition, on $1 tenant and $2 cluster, under which the
// gateway may learn from a cluster's traffic: no sync pushed within the
// lease (the interval is $N, bound by the caller).
const notSynced = `NOT EXISTS (SELECT 1 FROM cluster_inventory_sync s
	WHERE s.tenant_id = $1 AND s.cluster_id = $2 AND s.pushed_at > now() - %s::interval)`

func leaseParam() string { return fmt.Sprintf("%d milliseconds", SyncLease.Milliseconds()) }

// Observe records what one request on a namespace showed, in one
// transaction: committed, when not nil, is what the apiserver had stored
// (the request's oldObject); it replaces the committed object and drops
// the provisional one, which it confirms or corrects. provisional, when not
// nil, is what an allowed CREATE or UPDATE proposed. Nothing is written
// while a sync is running for the cluster: it is the truth then. The
// webhook calls it through Cache.Observe, off the hot path.
func (s *Store) Observe(ctx context.Context, tenantID, clusterID int64, committed, provisional *corev1.Namespace) error {
	var cjs, pjs []byte
	var err error
	name := ""
	if committed != nil {
		if _, cjs, err = cleanNamespace(committed); err != nil {
			return err
		}
		name = committed.Name
	}
	if provisional != nil {
		if _, pjs, err = cleanNamespace(provisional); err != nil {
			return err
		}
		name = provisional.Name
	}
	if name == "" || committed != nil && provisional != nil && committed.Name != provisional.Name {
		return fault.Errorf(fault.Invalid, "an observation is of one namespace")
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var learning bool
		if err := tx.QueryRow(ctx, `SELECT `+fmt.Sprintf(notSynced, "$3"), tenantID, clusterID, leaseParam()).Scan(&learning); err != nil {
			return err
		}
		if !learning {
			return nil
		}
		b, err := s.bounds(ctx, tx, tenantID)
		if err != nil {
			return err
		}
		if n, known, err := namespaceCount(ctx, tx, tenantID, clusterID, name); err != nil {
			return err
		} else if !known && n >= b.Namespaces {
			return errOverBound
		}
		if cjs != nil {
			// An oldObject older than the committed object (two requests
			// racing, or replicas writing out of order) is stale: it
			// neither replaces that object nor confirms or corrects what
			// was proposed since.
			var storedRV string
			err := tx.QueryRow(ctx, `SELECT coalesce(object->'metadata'->>'resourceVersion', '') FROM cluster_namespaces
				WHERE tenant_id = $1 AND cluster_id = $2 AND name = $3 FOR UPDATE`, tenantID, clusterID, name).Scan(&storedRV)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			if olderVersion(committed.ResourceVersion, storedRV) {
				cjs = nil
			}
		}
		if cjs != nil {
			if _, err := tx.Exec(ctx, `INSERT INTO cluster_namespaces (tenant_id, cluster_id, name, object, source)
				VALUES ($1, $2, $3, $4, 'observed')
				ON CONFLICT (tenant_id, cluster_id, name) DO UPDATE SET object = EXCLUDED.object, source = 'observed', updated_at = now()`,
				tenantID, clusterID, name, cjs); err != nil {
				return namespaceWriteError(err, tenantID, clusterID)
			}
			if _, err := tx.Exec(ctx, `DELETE FROM cluster_namespaces_provisional WHERE tenant_id = $1 AND cluster_id = $2 AND name = $3`,
				tenantID, clusterID, name); err != nil {
				return err
			}
		}
		if pjs != nil {
			if _, err := tx.Exec(ctx, `INSERT INTO cluster_namespaces_provisional (tenant_id, cluster_id, name, object)
				VALUES ($1, $2, $3, $4)
				ON CONFLICT (tenant_id, cluster_id, name) DO UPDATE SET object = EXCLUDED.object, updated_at = now()`,
				tenantID, clusterID, name, pjs); err != nil {
				return namespaceWriteError(err, tenantID, clusterID)
			}
		}
		return pgnotify.Notify(ctx, tx, ChannelNamespaces, fmt.Sprintf("%d:%d:%s", tenantID, clusterID, name))
	})
}

// MarkNamespaceTerminating records that the namespace is being deleted
// (an allowed DELETE): status.phase Terminating and a deletionTimestamp, as
// the apiserver sets them. The namespace stays until the next upload, since
// the gateway never sees its finalization. fault.NotFound if it is not known.
// A DELETE is committed state: only a running sync overrides it.
func (s *Store) MarkNamespaceTerminating(ctx context.Context, tenantID, clusterID int64, name string, at time.Time) error {
	ts, err := json.Marshal(metav1.NewTime(at.UTC()))
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE cluster_namespaces SET
			object = jsonb_set(jsonb_set(object, '{status}', coalesce(object->'status', '{}') || '{"phase":"Terminating"}'),
			                   '{metadata,deletionTimestamp}', coalesce(object->'metadata'->'deletionTimestamp', $4::jsonb)),
			source = 'observed', updated_at = now()
			WHERE tenant_id = $1 AND cluster_id = $2 AND name = $3 AND `+fmt.Sprintf(notSynced, "$5"),
			tenantID, clusterID, name, string(ts), leaseParam())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notFound(kindNamespace, name)
		}
		return pgnotify.Notify(ctx, tx, ChannelNamespaces, fmt.Sprintf("%d:%d:%s", tenantID, clusterID, name))
	})
}

// ReplaceNamespaces makes nss the cluster's whole inventory: an upload is
// the source of truth, so namespaces not in it are removed, and so is
// everything provisional.
func (s *Store) ReplaceNamespaces(ctx context.Context, tenantID, clusterID int64, nss []*corev1.Namespace) error {
	return s.replaceNamespaces(ctx, tenantID, clusterID, nss, SourceUpload, nil)
}

// replaceNamespaces replaces the cluster's committed namespaces with nss,
// marked source, and clears the provisional ones; then, in the same
// transaction, runs also (if not nil).
func (s *Store) replaceNamespaces(ctx context.Context, tenantID, clusterID int64, nss []*corev1.Namespace, source string, also func(pgx.Tx) error) error {
	names := make([]string, 0, len(nss))
	objs := make([][]byte, 0, len(nss))
	seen := map[string]bool{}
	var errs field.ErrorList
	for i, ns := range nss {
		_, js, nsErrs, err := checkNamespace(ns)
		if err != nil {
			return err
		}
		if len(nsErrs) > 0 {
			errs = append(errs, under(field.NewPath("items").Index(i), nsErrs)...)
			continue
		}
		if seen[ns.Name] {
			errs = append(errs, field.Duplicate(field.NewPath("items").Index(i).Child("metadata", "name"), ns.Name))
			continue
		}
		seen[ns.Name] = true
		names, objs = append(names, ns.Name), append(objs, js)
	}
	if len(errs) > 0 {
		return invalid(kindNamespaceList, "", errs)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		b, err := s.bounds(ctx, tx, tenantID)
		if err != nil {
			return err
		}
		if len(names) > b.Namespaces {
			return tooMany(kindNamespaceList, field.NewPath("items"), len(names), b.Namespaces, "namespaces")
		}
		if _, err := tx.Exec(ctx, `DELETE FROM cluster_namespaces WHERE tenant_id = $1 AND cluster_id = $2 AND NOT (name = ANY($3))`,
			tenantID, clusterID, names); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO cluster_namespaces (tenant_id, cluster_id, name, object, source)
			SELECT $1, $2, n, o, $5 FROM unnest($3::text[], $4::jsonb[]) AS u(n, o)
			ON CONFLICT (tenant_id, cluster_id, name) DO UPDATE SET object = EXCLUDED.object, source = EXCLUDED.source, updated_at = now()`,
			tenantID, clusterID, names, objs, source); err != nil {
			return namespaceWriteError(err, tenantID, clusterID)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM cluster_namespaces_provisional WHERE tenant_id = $1 AND cluster_id = $2`,
			tenantID, clusterID); err != nil {
			return err
		}
		if also != nil {
			if err := also(tx); err != nil {
				return err
			}
		}
		return pgnotify.Notify(ctx, tx, ChannelNamespaces, fmt.Sprintf("%d:%d:", tenantID, clusterID))
	})
}

var kindNamespaceList = corev1.SchemeGroupVersion.WithKind("NamespaceList").GroupKind()

func namespaceWriteError(err error, tenantID, clusterID int64) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23503" { // foreign_key_violation: no such cluster of the tenant
		return fault.Wrap(err, fault.NotFound, "cluster %d of tenant %d not found", clusterID, tenantID)
	}
	return err
}
