package decisions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// partitionLockID serialises partition changes between replicas, so two
// of them creating tomorrow's partition at once do not collide.
const partitionLockID = 0x64656369 // "deci"

// partitionPrefix names the daily partitions: decisions_p20261123 holds
// [2026-11-23T00:00Z, 2026-11-24T00:00Z).
const partitionPrefix = "decisions_p"

// Partitions keeps the daily partitions of the decisions table: it creates
// them ahead of time and drops those older than the retention.
type Partitions struct {
	Pool *pgxpool.Pool
	// Retention is how long decisions are kept; a day's partition is dropped
	// once its end is older than this. At least 24h.
	Retention time.Duration
	// Ahead is how many days after today get a partition in advance (3 when
	// zero), so that writes never wait for one and a missed run is harmless.
	Ahead int
	// Interval between runs of Run (1h when zero): more often than daily,
	// so that a replica started just before midnight still creates the next
	// days in time. A failed run is retried within a minute.
	Interval time.Duration
	Logger   *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

func (p *Partitions) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Run maintains the partitions now and then every Interval until ctx ends.
// Failures are logged and retried at the next run.
func (p *Partitions) Run(ctx context.Context) error {
	interval := p.Interval
	if interval <= 0 {
		interval = time.Hour
	}
	for {
		wait := interval
		if err := p.Maintain(ctx); err != nil && ctx.Err() == nil {
			// Writes create a missing partition themselves; retrying soon
			// keeps them from having to.
			wait = min(interval, time.Minute)
			if p.Logger != nil {
				p.Logger.Error("decision partition maintenance failed", "error", err, "retry_in", wait.String())
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// Maintain creates the partitions from today to today+Ahead, drops those
// past the retention and deletes their decision counts.
func (p *Partitions) Maintain(ctx context.Context) error {
	if p.Retention < 24*time.Hour {
		return fmt.Errorf("decision retention %s is shorter than a day's partition", p.Retention)
	}
	ahead := p.Ahead
	if ahead <= 0 {
		ahead = 3
	}
	now := p.now().UTC()
	today := day(now)
	days := make([]time.Time, 0, ahead+1)
	for i := range ahead + 1 {
		days = append(days, today.AddDate(0, 0, i))
	}
	if err := ensurePartitions(ctx, p.Pool, days); err != nil {
		return err
	}
	cutoff := now.Add(-p.Retention)
	dropped, err := p.dropBefore(ctx, cutoff)
	if len(dropped) > 0 && p.Logger != nil {
		p.Logger.Info("dropped decision partitions past retention", "partitions", dropped, "retention", p.Retention.String())
	}
	if err != nil {
		return err
	}
	// Every run, not only one that dropped something: a run that died
	// between the drop and this finishes here.
	return deleteCounts(ctx, p.Pool, cutoff)
}

// dropBefore drops every daily partition whose whole day ends at or before
// cutoff, and returns their names. Each is first detached CONCURRENTLY,
// which takes only SHARE UPDATE EXCLUSIVE on decisions (readers and COPY go
// on), then dropped. Every lock wait gives up after partitionLockTimeout;
// a partition left half-way (detach pending, or detached but not dropped)
// is finished by the next run.
func (p *Partitions) dropBefore(ctx context.Context, cutoff time.Time) ([]string, error) {
	tables, err := partitionTables(ctx, p.Pool)
	if err != nil {
		return nil, err
	}
	var dropped []string
	for _, t := range tables {
		if t.day.AddDate(0, 0, 1).After(cutoff) {
			continue
		}
		if err := dropPartition(ctx, p.Pool, t.name); err != nil {
			return dropped, fmt.Errorf("drop partition %s: %w", t.name, err)
		}
		dropped = append(dropped, t.name)
	}
	return dropped, nil
}

// dropPartition detaches (CONCURRENTLY, which cannot run in a transaction
// block, hence a session of its own) and drops one partition, holding the
// partition advisory lock of the session.
func dropPartition(ctx context.Context, pool *pgxpool.Pool, name string) (err error) {
	c, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			// The session holds a lock_timeout and maybe the advisory lock:
			// close it rather than hand it back to the pool.
			conn := c.Hijack()
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = conn.Close(cctx)
			return
		}
		c.Release()
	}()
	exec := func(sql string, args ...any) error {
		_, err := c.Exec(ctx, sql, args...)
		return err
	}
	if err := exec("SET lock_timeout = '" + partitionLockTimeout + "'"); err != nil {
		return err
	}
	if err := exec("SELECT pg_advisory_lock($1)", partitionLockID); err != nil {
		return err
	}
	var attached, pending bool
	err = c.QueryRow(ctx, `
		SELECT EXISTS (SELECT FROM pg_inherits WHERE inhrelid = to_regclass($1) AND inhparent = 'decisions'::regclass),
		       EXISTS (SELECT FROM pg_inherits WHERE inhrelid = to_regclass($1) AND inhparent = 'decisions'::regclass AND inhdetachpending)`,
		pgx.Identifier{name}.Sanitize()).Scan(&attached, &pending)
	if err != nil {
		return err
	}
	ident := pgx.Identifier{name}.Sanitize()
	switch {
	case pending:
		// An earlier detach timed out waiting for old snapshots.
		err = exec("ALTER TABLE decisions DETACH PARTITION " + ident + " FINALIZE")
	case attached:
		err = exec("ALTER TABLE decisions DETACH PARTITION " + ident + " CONCURRENTLY")
	}
	if err != nil {
		return err
	}
	if err := exec("DROP TABLE IF EXISTS " + ident); err != nil {
		return err
	}
	if err := exec("SELECT pg_advisory_unlock($1)", partitionLockID); err != nil {
		return err
	}
	return exec("RESET lock_timeout")
}

// partitionTable is a table named as a daily partition: attached, pending
// detach, or detached by a drop that failed before the DROP.
type partitionTable struct {
	name string
	day  time.Time
}

func partitionTables(ctx context.Context, db querier) ([]partitionTable, error) {
	rows, err := db.Query(ctx, `
		SELECT c.relname FROM pg_class c
		WHERE c.relkind = 'r' AND c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = 'decisions'::regclass)
		  AND c.relname LIKE 'decisions\_p%'
		  AND (EXISTS (SELECT FROM pg_inherits i WHERE i.inhrelid = c.oid AND i.inhparent = 'decisions'::regclass)
		       OR NOT EXISTS (SELECT FROM pg_inherits i WHERE i.inhrelid = c.oid))
		ORDER BY c.relname`)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var out []partitionTable
	for _, n := range names {
		if d, ok := partitionDay(n); ok {
			out = append(out, partitionTable{name: n, day: d})
		}
	}
	return out, nil
}

func partitionDay(name string) (time.Time, bool) {
	if !strings.HasPrefix(name, partitionPrefix) {
		return time.Time{}, false
	}
	d, err := time.Parse("20060102", strings.TrimPrefix(name, partitionPrefix))
	return d, err == nil
}

// ListPartitions returns the first day (UTC midnight) of every daily
// partition of the decisions table, oldest first.
func ListPartitions(ctx context.Context, db querier) ([]time.Time, error) {
	rows, err := db.Query(ctx, `
		SELECT c.relname FROM pg_inherits i
		JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'decisions'::regclass
		ORDER BY c.relname`)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var days []time.Time
	for _, n := range names {
		// Only partitions made here follow the naming; anything else an
		// operator attached is left alone.
		if d, ok := partitionDay(n); ok {
			days = append(days, d)
		}
	}
	return days, nil
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// partitionLockTimeout bounds every wait for a lock of partition DDL: a
// long reader of decisions (a stats query, a dashboard) must never make
// the recorder's writes queue behind a DDL statement waiting for it. A
// change that times out is retried by the next maintenance run.
const partitionLockTimeout = "500ms"

// ensurePartitions creates the daily partitions of the given days that do
// not exist yet. A partition is created as a table of its own and then
// attached: ATTACH PARTITION takes SHARE UPDATE EXCLUSIVE on decisions,
// which neither readers nor COPY conflict with, where CREATE TABLE ...
// PARTITION OF would take ACCESS EXCLUSIVE.
func ensurePartitions(ctx context.Context, pool *pgxpool.Pool, days []time.Time) error {
	existing, err := ListPartitions(ctx, pool)
	if err != nil {
		return err
	}
	have := map[time.Time]bool{}
	for _, d := range existing {
		have[d] = true
	}
	for _, d := range days {
		d = day(d)
		if have[d] {
			continue
		}
		if err := createPartition(ctx, pool, d); err != nil {
			return err
		}
		have[d] = true
	}
	return nil
}

// createPartition creates and attaches the partition of day d, in one
// transaction whose every lock wait is bounded.
func createPartition(ctx context.Context, pool *pgxpool.Pool, d time.Time) error {
	name := partitionName(d)
	ident := pgx.Identifier{name}.Sanitize()
	from, to := d.Format(time.RFC3339), d.AddDate(0, 0, 1).Format(time.RFC3339)
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '"+partitionLockTimeout+"'"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", partitionLockID); err != nil {
			return err
		}
		var exists, attached bool
		err := tx.QueryRow(ctx, `
			SELECT to_regclass($1) IS NOT NULL,
			       EXISTS (SELECT FROM pg_inherits WHERE inhrelid = to_regclass($1) AND inhparent = 'decisions'::regclass)`,
			ident).Scan(&exists, &attached)
		if err != nil || attached {
			return err // another replica made it meanwhile
		}
		if !exists {
			// LIKE copies the columns, NOT NULL and CHECK constraints and
			// the indexes (the key among them), which ATTACH then adopts
			// as the partitions of the parent's indexes. The bound CHECK
			// lets ATTACH skip scanning the table.
			sql := fmt.Sprintf(`CREATE TABLE %s (LIKE decisions INCLUDING ALL,
				CONSTRAINT %s CHECK (time >= '%s' AND time < '%s'))`,
				ident, pgx.Identifier{name + "_bounds"}.Sanitize(), from, to)
			if _, err := tx.Exec(ctx, sql); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, fmt.Sprintf("ALTER TABLE decisions ATTACH PARTITION %s FOR VALUES FROM ('%s') TO ('%s')",
			ident, from, to))
		return err
	})
	if err != nil {
		return fmt.Errorf("create partition %s: %w", name, err)
	}
	return nil
}

// daysOf returns the distinct days of the decisions' times.
func daysOf(ds []*Decision) []time.Time {
	seen := map[time.Time]bool{}
	var days []time.Time
	for _, d := range ds {
		if t := day(d.Time); !seen[t] {
			seen[t] = true
			days = append(days, t)
		}
	}
	return days
}

func partitionName(d time.Time) string { return partitionPrefix + d.UTC().Format("20060102") }

// day is the UTC midnight that starts t's day.
func day(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// isNoPartition reports whether err is PostgreSQL refusing a row that no
// partition accepts.
func isNoPartition(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23514" && strings.Contains(pe.Message, "no partition")
}
