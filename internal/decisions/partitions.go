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

// Maintain creates the partitions from today to today+Ahead and drops
// those past the retention.
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
	dropped, err := p.dropBefore(ctx, now.Add(-p.Retention))
	if len(dropped) > 0 && p.Logger != nil {
		p.Logger.Info("dropped decision partitions past retention", "partitions", dropped, "retention", p.Retention.String())
	}
	return err
}

// dropBefore drops every daily partition whose whole day ends at or before
// cutoff, and returns their names.
func (p *Partitions) dropBefore(ctx context.Context, cutoff time.Time) ([]string, error) {
	days, err := ListPartitions(ctx, p.Pool)
	if err != nil {
		return nil, err
	}
	var dropped []string
	for _, d := range days {
		if d.AddDate(0, 0, 1).After(cutoff) {
			continue
		}
		name := partitionName(d)
		err := pgx.BeginFunc(ctx, p.Pool, func(tx pgx.Tx) error {
			// Dropping a partition locks the parent table; never queue the
			// recorder's writes behind a long wait for that lock.
			if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '5s'"); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", partitionLockID); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{name}.Sanitize())
			return err
		})
		if err != nil {
			return dropped, fmt.Errorf("drop partition %s: %w", name, err)
		}
		dropped = append(dropped, name)
	}
	return dropped, nil
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
		d, err := time.Parse("20060102", strings.TrimPrefix(n, partitionPrefix))
		if err != nil || !strings.HasPrefix(n, partitionPrefix) {
			continue
		}
		days = append(days, d)
	}
	return days, nil
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// ensurePartitions creates the daily partitions of the given days that do
// not exist yet.
func ensurePartitions(ctx context.Context, pool *pgxpool.Pool, days []time.Time) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", partitionLockID); err != nil {
			return err
		}
		for _, d := range days {
			if err := createPartition(ctx, tx, d); err != nil {
				return err
			}
		}
		return nil
	})
}

func createPartition(ctx context.Context, db execer, d time.Time) error {
	d = day(d)
	sql := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s PARTITION OF decisions FOR VALUES FROM ('%s') TO ('%s')",
		pgx.Identifier{partitionName(d)}.Sanitize(), d.Format(time.RFC3339), d.AddDate(0, 0, 1).Format(time.RFC3339))
	if _, err := db.Exec(ctx, sql); err != nil {
		return fmt.Errorf("create partition %s: %w", partitionName(d), err)
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
