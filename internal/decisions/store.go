package decisions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// Store reads a tenant's decisions.
type Store struct {
	pool *pgxpool.Pool
	// timeout bounds each List and Stats in the database (statement_timeout).
	timeout time.Duration
}

// QueryTimeout bounds every query of a Store: a broad filter over a long
// retention must not hold a connection, and the locks it reads under, for
// long.
const QueryTimeout = 30 * time.Second

// NewStore returns a Store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool, timeout: QueryTimeout} }

// readTx runs fn in a read-only transaction whose statements time out
// after s.timeout (also when they wait for a lock).
func (s *Store) readTx(ctx context.Context, iso pgx.TxIsoLevel, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: iso, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		ms := s.timeout.Milliseconds()
		if ms <= 0 {
			ms = QueryTimeout.Milliseconds()
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL statement_timeout = %d", ms)); err != nil {
			return err
		}
		return fn(tx)
	})
}

// Page sizes of List.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// Filter selects decisions for List. Zero fields do not filter. Since is
// inclusive and Until exclusive. Policy matches a decision in which one of
// the policy's bindings matched. Cursor is Page.Continue of the page before.
type Filter struct {
	Since, Until time.Time
	Verdict      string
	Cluster      string
	Policy       string
	Namespace    string
	Kind         string
	User         string
	Limit        int
	Cursor       string

	// Operation (CREATE, UPDATE, DELETE, CONNECT) and Resource (pods) are
	// the request's.
	Operation string
	Resource  string
}

// cursor is the position after the last item of a page, newest first.
type cursor struct {
	Time time.Time `json:"t"`
	ID   string    `json:"i"`
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err == nil {
		_, err = uuid.Parse(c.ID)
	}
	if err != nil || c.Time.IsZero() {
		return c, fault.InvalidField("continue", "not a cursor returned by a previous page")
	}
	return c, nil
}

func validVerdict(v string) bool {
	switch Verdict(v) {
	case VerdictAllowed, VerdictDenied, VerdictWarned, VerdictError, VerdictRejected:
		return true
	}
	return false
}

func checkRange(since, until time.Time) error {
	if !since.IsZero() && !until.IsZero() && since.After(until) {
		return fault.InvalidField("since", "since is after until")
	}
	return nil
}

// List returns the tenant's decisions that match f, newest first.
func (s *Store) List(ctx context.Context, tenantID int64, f Filter) (Page, error) {
	limit, where, args, err := f.conditions([]any{tenantID})
	if err != nil {
		return Page{}, err
	}
	where = append([]string{"tenant_id = $1"}, where...)
	args = append(args, limit+1)
	sql := fmt.Sprintf(`SELECT %s FROM decisions WHERE %s ORDER BY time DESC, id DESC LIMIT $%d`,
		recordColumns, strings.Join(where, " AND "), len(args))
	return s.page(ctx, sql, args, limit)
}

// conditions validates f and returns its page size and its conditions,
// numbered after the args given, and the args with f's appended.
func (f Filter) conditions(args []any) (limit int, where []string, _ []any, err error) {
	limit = f.Limit
	switch {
	case limit == 0:
		limit = DefaultLimit
	case limit < 0 || limit > MaxLimit:
		return 0, nil, nil, fault.InvalidField("limit", "must be between 1 and %d", MaxLimit)
	}
	if err := checkRange(f.Since, f.Until); err != nil {
		return 0, nil, nil, err
	}
	if f.Verdict != "" && !validVerdict(f.Verdict) {
		return 0, nil, nil, fault.InvalidField("verdict", "must be one of allowed, denied, warned, error, rejected")
	}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if !f.Since.IsZero() {
		add("time >= $%d", f.Since)
	}
	if !f.Until.IsZero() {
		add("time < $%d", f.Until)
	}
	if f.Verdict != "" {
		add("verdict = $%d", f.Verdict)
	}
	if f.Cluster != "" {
		add("cluster = $%d", f.Cluster)
	}
	if f.Policy != "" {
		add("policies @> ARRAY[$%d::text]", f.Policy)
	}
	if f.Namespace != "" {
		add("namespace = $%d", f.Namespace)
	}
	if f.Kind != "" {
		add("kind = $%d", f.Kind)
	}
	if f.User != "" {
		add("user_name = $%d", f.User)
	}
	if f.Operation != "" {
		add("operation = $%d", f.Operation)
	}
	if f.Resource != "" {
		add("resource = $%d", f.Resource)
	}
	if f.Cursor != "" {
		c, err := decodeCursor(f.Cursor)
		if err != nil {
			return 0, nil, nil, err
		}
		args = append(args, c.Time, c.ID)
		where = append(where, fmt.Sprintf("(time, id) < ($%d, $%d::uuid)", len(args)-1, len(args)))
	}
	return limit, where, args, nil
}

// page runs a listing that asks for one row more than limit, which says
// whether another page follows.
func (s *Store) page(ctx context.Context, sql string, args []any, limit int) (Page, error) {
	var items []Record
	err := s.readTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		items, err = pgx.CollectRows(rows, scanRecord)
		return err
	})
	if err != nil {
		return Page{}, err
	}
	return pageOf(items, limit), nil
}

// pageOf is the page of items, which hold one more than limit when
// another page follows.
func pageOf(items []Record, limit int) Page {
	page := Page{Items: items}
	if len(items) > limit {
		page.Items = items[:limit]
		last := page.Items[limit-1]
		page.Continue = cursor{Time: last.Time, ID: last.ID}.encode()
	}
	return page
}

const recordColumns = `id, time, tenant, cluster, uid, operation, api_group, api_version, resource,
	subresource, kind, namespace, name, user_name, user_groups, dry_run, verdict, http_status, code,
	reason, message, warnings, audit_annotations, bindings, latency_ms, instance, snapshot_version,
	endpoint, mutated, mutated_by, patch, patch_truncated`

func scanRecord(row pgx.CollectableRow) (Record, error) {
	var r Record
	err := row.Scan(&r.ID, &r.Time, &r.Tenant, &r.Cluster, &r.UID, &r.Operation, &r.Group, &r.Version,
		&r.Resource, &r.SubResource, &r.Kind, &r.Namespace, &r.Name, &r.UserName, &r.UserGroups, &r.DryRun,
		&r.Verdict, &r.HTTPStatus, &r.Code, &r.Reason, &r.Message, &r.Warnings, &r.AuditAnnotations, &r.Bindings,
		&r.LatencyMs, &r.Instance, &r.SnapshotVersion, &r.Endpoint, &r.Mutated, &r.MutatedBy, &r.Patch, &r.PatchTruncated)
	r.Time = r.Time.UTC()
	return r, err
}
