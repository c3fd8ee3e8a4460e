package decisions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// replayChunk is how many spilled rows one replay transaction inserts.
const replayChunk = 5_000

func (r *PGRecorder) replayLoop(ctx context.Context) {
	defer close(r.replayDone)
	tick := time.NewTicker(r.cfg.RetryInterval)
	defer tick.Stop()
	for {
		// While the database is down, probe it before replaying: a replay
		// closes the spill file being written, and one attempt a second
		// would leave a file a second behind.
		if r.spool.pending() || r.down.Load() {
			if err := r.probe(ctx); err != nil {
				r.logReplayFailure(ctx, err)
			} else if n, err := r.Replay(ctx); err != nil {
				r.logReplayFailure(ctx, err)
			} else if r.down.Swap(false) {
				r.cfg.Logger.Info("the database is back: writing decisions again", "replayed", n)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-r.replayNow:
		}
	}
}

func (r *PGRecorder) probe(ctx context.Context) error {
	if !r.down.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.WriteTimeout)
	defer cancel()
	return r.cfg.Pool.Ping(ctx)
}

// logReplayFailure logs at most every 30s while the database stays away.
func (r *PGRecorder) logReplayFailure(ctx context.Context, err error) {
	if ctx.Err() != nil || time.Since(r.lastReplayLog) < 30*time.Second {
		return
	}
	r.lastReplayLog = time.Now()
	r.cfg.Logger.Warn("replaying spilled decisions failed; retrying", "error", err,
		"spill_bytes", r.spool.bytes.Load(), "spill_dir", r.cfg.SpillDir)
}

// Replay inserts every spilled decision that the database does not have
// yet, and removes each spill file once its rows are committed. Running it
// again, or after a crash between commit and removal, inserts nothing
// twice: the insert skips ids already stored. It returns the rows inserted.
func (r *PGRecorder) Replay(ctx context.Context) (int, error) {
	r.replayMu.Lock()
	defer r.replayMu.Unlock()
	if err := r.spool.rotate(); err != nil {
		return 0, fmt.Errorf("close the spill file: %w", err)
	}
	segs, err := r.spool.segments()
	if err != nil {
		return 0, err
	}
	total := 0
	for _, seg := range segs {
		inserted := 0
		bad, err := readSegment(seg, replayChunk, func(ds []*Decision) error {
			n, err := r.insertOnce(ctx, ds)
			inserted += n
			return err
		})
		total += inserted
		r.m.replayed.Add(float64(inserted))
		if err != nil {
			return total, fmt.Errorf("replay %s: %w", seg, err)
		}
		if bad > 0 {
			// The last line of a file written when the process died, or damage.
			r.m.dropped.Add(float64(bad))
			r.cfg.Logger.Error("DECISIONS LOST: unreadable lines in a spill file (torn by a crash?)",
				"count", bad, "file", seg)
		}
		if err := r.spool.remove(seg); err != nil {
			return total, err
		}
	}
	return total, nil
}

// insertOnce inserts the decisions whose id is not stored yet, through a
// staging table: COPY cannot skip conflicts. Rows PostgreSQL refuses as
// data are inserted one by one so that one bad row loses only itself.
func (r *PGRecorder) insertOnce(ctx context.Context, ds []*Decision) (int, error) {
	if err := ensurePartitions(ctx, r.cfg.Pool, daysOf(ds)); err != nil {
		return 0, err
	}
	rows, err := rowsOf(ds)
	if err != nil {
		return 0, err
	}
	var n int64
	err = pgx.BeginFunc(ctx, r.cfg.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE decisions_replay (LIKE decisions) ON COMMIT DROP`); err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"decisions_replay"}, columns, pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO decisions SELECT * FROM decisions_replay ON CONFLICT DO NOTHING`)
		n = tag.RowsAffected()
		return err
	})
	if isDataError(err) {
		return r.insertEach(ctx, ds, rows)
	}
	return int(n), err
}

func (r *PGRecorder) insertEach(ctx context.Context, ds []*Decision, rows [][]any) (int, error) {
	sql := fmt.Sprintf("INSERT INTO decisions (%s) VALUES (%s) ON CONFLICT DO NOTHING",
		strings.Join(columns, ", "), placeholders(len(columns)))
	n := 0
	for i, row := range rows {
		tag, err := r.cfg.Pool.Exec(ctx, sql, row...)
		switch {
		case isDataError(err):
			r.drop(1, fmt.Errorf("decision %s refused by the database: %w", ds[i].ID, err))
		case err != nil:
			return n, err
		default:
			n += int(tag.RowsAffected())
		}
	}
	return n, nil
}

func placeholders(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$%d", i+1)
	}
	return b.String()
}

// isDataError reports whether PostgreSQL refused the data itself (class
// 22 data exception, 23 integrity violation), which no retry will change.
func isDataError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "23")) && !isNoPartition(err)
}
