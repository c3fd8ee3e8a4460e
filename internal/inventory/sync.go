package inventory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/portcullis-dev/portcullis/internal/pgnotify"
)

// syncPrefix starts the namespace part of a sync heartbeat's notification,
// "<tenant>:<cluster>:#sync=<unix ms of the push>"; no namespace name holds
// '#'.
const syncPrefix = "#sync="

// SyncPushedAt returns when the cluster's namespace sync last pushed; zero
// if it never did.
func (s *Store) SyncPushedAt(ctx context.Context, tenantID, clusterID int64) (time.Time, error) {
	var t time.Time
	err := s.pool.QueryRow(ctx, `SELECT pushed_at FROM cluster_inventory_sync WHERE tenant_id = $1 AND cluster_id = $2`,
		tenantID, clusterID).Scan(&t)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, nil
	}
	return t, err
}

// SyncPush is one push of the namespace sync (admin namespaces sync).
type SyncPush struct {
	// Full makes Namespaces the cluster's whole inventory, as an upload
	// does (the sync's list); otherwise Namespaces are upserted and Deleted
	// removed (its watch events). Either way what is provisional about
	// these namespaces is dropped: the sync reads what the apiserver
	// stored.
	Full       bool
	Namespaces []*corev1.Namespace
	Deleted    []string
}

// Sync records a push of the cluster's namespace sync and renews its lease:
// while the lease runs, the gateway learns nothing from the cluster's
// traffic. It returns the time of the push.
func (s *Store) Sync(ctx context.Context, tenantID, clusterID int64, p SyncPush) (time.Time, error) {
	var pushed time.Time
	heartbeat := func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO cluster_inventory_sync (tenant_id, cluster_id, pushed_at) VALUES ($1, $2, now())
			ON CONFLICT (tenant_id, cluster_id) DO UPDATE SET pushed_at = now() RETURNING pushed_at`,
			tenantID, clusterID).Scan(&pushed); err != nil {
			return namespaceWriteError(err, tenantID, clusterID)
		}
		return pgnotify.Notify(ctx, tx, ChannelNamespaces, fmt.Sprintf("%d:%d:%s%d", tenantID, clusterID, syncPrefix, pushed.UnixMilli()))
	}
	if p.Full {
		if len(p.Deleted) > 0 {
			return time.Time{}, invalid(kindNamespaceList, "", field.ErrorList{field.Forbidden(field.NewPath("deleted"), "a full push lists every namespace; it deletes nothing by name")})
		}
		err := s.replaceNamespaces(ctx, tenantID, clusterID, p.Namespaces, SourceSync, heartbeat)
		return pushed, err
	}
	type row struct {
		name string
		js   []byte
	}
	rows := make([]row, 0, len(p.Namespaces))
	var errs field.ErrorList
	for i, ns := range p.Namespaces {
		_, js, nsErrs, err := checkNamespace(ns)
		if err != nil {
			return time.Time{}, err
		}
		errs = append(errs, under(field.NewPath("namespaces").Index(i), nsErrs)...)
		if len(nsErrs) == 0 {
			rows = append(rows, row{ns.Name, js})
		}
	}
	// A deleted name is checked as a pushed one is: the sync reads names
	// from the apiserver, so a malformed one is a client's error, not a
	// no-op to let through.
	for i, name := range p.Deleted {
		at := field.NewPath("deleted").Index(i)
		if name == "" {
			errs = append(errs, field.Required(at, ""))
		} else if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
			errs = append(errs, field.Invalid(at, name, strings.Join(msgs, "; ")))
		}
	}
	if len(errs) > 0 {
		return time.Time{}, invalid(kindNamespaceList, "", errs)
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, r := range rows {
			if _, err := tx.Exec(ctx, `INSERT INTO cluster_namespaces (tenant_id, cluster_id, name, object, source)
				VALUES ($1, $2, $3, $4, 'sync')
				ON CONFLICT (tenant_id, cluster_id, name) DO UPDATE SET object = EXCLUDED.object, source = 'sync', updated_at = now()`,
				tenantID, clusterID, r.name, r.js); err != nil {
				return namespaceWriteError(err, tenantID, clusterID)
			}
		}
		names := make([]string, 0, len(rows)+len(p.Deleted))
		for _, r := range rows {
			names = append(names, r.name)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM cluster_namespaces WHERE tenant_id = $1 AND cluster_id = $2 AND name = ANY($3)`,
			tenantID, clusterID, p.Deleted); err != nil {
			return err
		}
		names = append(names, p.Deleted...)
		if _, err := tx.Exec(ctx, `DELETE FROM cluster_namespaces_provisional WHERE tenant_id = $1 AND cluster_id = $2 AND name = ANY($3)`,
			tenantID, clusterID, names); err != nil {
			return err
		}
		if len(rows) > 0 {
			b, err := s.bounds(ctx, tx, tenantID)
			if err != nil {
				return err
			}
			if n, _, err := namespaceCount(ctx, tx, tenantID, clusterID, ""); err != nil {
				return err
			} else if n > b.Namespaces {
				return tooMany(kindNamespaceList, field.NewPath("namespaces"), n, b.Namespaces, "namespaces")
			}
		}
		for _, name := range names {
			if err := pgnotify.Notify(ctx, tx, ChannelNamespaces, fmt.Sprintf("%d:%d:%s", tenantID, clusterID, name)); err != nil {
				return err
			}
		}
		return heartbeat(tx)
	})
	return pushed, err
}
