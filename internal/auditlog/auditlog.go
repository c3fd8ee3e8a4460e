// Package auditlog keeps the admin audit log: one row per mutating call of
// the admin API, saying who changed which object, when, and its versions
// before and after.
package auditlog

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Entry is one mutating call (apiv1.AuditEntry on the wire).
type Entry struct {
	ID   int64
	Time time.Time
	// Actor identifies who made the call: the token's id and role, as
	// ActorOf makes it ("token:42/admin"). ActorName is the token's name,
	// a label that anyone who mints a token may choose: never an identity.
	Actor     string
	ActorName string
	TokenID   int64
	// Tenant is the tenant's name; empty for gateway-wide objects such as
	// operator tokens.
	Tenant    string
	Action    string
	Kind      string
	Namespace string
	Name      string
	// VersionBefore and VersionAfter are the object's versions around the
	// change, where it has versions (policy objects).
	VersionBefore *int64
	VersionAfter  *int64
	DryRun        bool
	Detail        map[string]any
}

// Store writes and reads the admin_audit_log table.
type Store struct{ pool *pgxpool.Pool }

// NewStore returns a store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Record appends e. tenantID is 0 for gateway-wide objects.
func (s *Store) Record(ctx context.Context, tenantID int64, e Entry) error {
	return s.RecordAll(ctx, tenantID, []Entry{e})
}

// RecordAll appends the entries in one statement: a large apply records
// one entry per changed object, and one insert each cost as much as the
// apply itself.
func (s *Store) RecordAll(ctx context.Context, tenantID int64, es []Entry) error {
	rows := make([][]any, len(es))
	for i, e := range es {
		detail := e.Detail
		if detail == nil {
			detail = map[string]any{}
		}
		js, err := json.Marshal(detail)
		if err != nil {
			return fmt.Errorf("audit detail: %w", err)
		}
		rows[i] = []any{e.Actor, e.ActorName, nullZero(e.TokenID), nullZero(tenantID), e.Tenant, e.Action, e.Kind, e.Namespace,
			e.Name, e.VersionBefore, e.VersionAfter, e.DryRun, js}
	}
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"admin_audit_log"},
		[]string{"actor", "actor_name", "token_id", "tenant_id", "tenant", "action", "kind", "namespace", "name",
			"version_before", "version_after", "dry_run", "detail"},
		pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("write audit log: %w", err)
	}
	return nil
}

// ActorOf is the actor of a call made with the token id of the given role:
// "token:42/admin".
func ActorOf(tokenID int64, role string) string { return fmt.Sprintf("token:%d/%s", tokenID, role) }

func nullZero(v int64) *int64 {
	if v == 0 {
		return nil
	}
	return &v
}

// Filter selects entries. Zero fields match everything.
type Filter struct {
	Since, Until time.Time
	// Actor matches the actor exactly ("token:42/admin"), or by the
	// token's id alone ("token:42"). ActorName matches the name.
	Actor     string
	ActorName string
	Kind      string
	Name      string
	// Tenant matches the tenant's name as recorded, so that the entries of
	// a deleted tenant can still be found.
	Tenant string
	// Before pages backwards: only entries with a smaller id.
	Before int64
	Limit  int
}

// List returns the tenant's entries, newest first. tenantID 0 lists every
// tenant's entries and the gateway-wide ones (operators only).
func (s *Store) List(ctx context.Context, tenantID int64, f Filter) ([]Entry, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	var since, until *time.Time
	if !f.Since.IsZero() {
		since = &f.Since
	}
	if !f.Until.IsZero() {
		until = &f.Until
	}
	rows, err := s.pool.Query(ctx, `SELECT id, time, actor, actor_name, coalesce(token_id, 0), tenant, action, kind, namespace, name,
			version_before, version_after, dry_run, detail
		FROM admin_audit_log
		WHERE ($1 = 0 OR tenant_id = $1)
		  AND ($2::timestamptz IS NULL OR time >= $2) AND ($3::timestamptz IS NULL OR time < $3)
		  AND ($4 = '' OR actor = $4 OR actor LIKE $4 || '/%') AND ($10 = '' OR actor_name = $10) AND ($5 = '' OR lower(kind) = lower($5)) AND ($6 = '' OR name = $6)
		  AND ($7 = 0 OR id < $7) AND ($9 = '' OR tenant = $9)
		ORDER BY id DESC LIMIT $8`,
		tenantID, since, until, f.Actor, f.Kind, f.Name, f.Before, f.Limit, f.Tenant, f.ActorName)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Entry, error) {
		var e Entry
		err := row.Scan(&e.ID, &e.Time, &e.Actor, &e.ActorName, &e.TokenID, &e.Tenant, &e.Action, &e.Kind, &e.Namespace, &e.Name,
			&e.VersionBefore, &e.VersionAfter, &e.DryRun, &e.Detail)
		if len(e.Detail) == 0 {
			e.Detail = nil
		}
		return e, err
	})
}
