package decisions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
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
		// would leave a file a second behind. A successful probe resumes
		// direct writes at once, whatever becomes of the replay: a replay
		// that keeps failing (a segment that cannot be removed) must not
		// keep every new decision on disk.
		if r.down.Load() {
			if err := r.probe(ctx); err != nil {
				r.logReplayFailure(ctx, err)
			} else if r.down.Swap(false) {
				r.cfg.Logger.Info("the database is back: writing decisions again",
					"spill_bytes", r.spool.bytes.Load())
			}
		}
		if !r.down.Load() && r.spool.pending() {
			if _, err := r.Replay(ctx); err != nil {
				r.logReplayFailure(ctx, err)
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

// replayChunkTimeout bounds one chunk of a replay, so that a replay
// stuck on a lock cannot hold the replayer forever.
func (r *PGRecorder) replayChunkTimeout() time.Duration {
	return max(6*r.cfg.WriteTimeout, 30*time.Second)
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
			ds = r.skipPastRetention(ds, seg)
			if len(ds) == 0 {
				return nil
			}
			cctx, cancel := context.WithTimeout(ctx, r.replayChunkTimeout())
			defer cancel()
			n, err := r.insertOnce(cctx, ds)
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

// skipPastRetention drops, loudly, the decisions whose day's partition
// retention has already dropped (or will at its next run): inserting them
// would create that partition again.
func (r *PGRecorder) skipPastRetention(ds []*Decision, seg string) []*Decision {
	if r.cfg.Retention <= 0 {
		return ds
	}
	cutoff := time.Now().Add(-r.cfg.Retention)
	kept := ds[:0]
	old := 0
	var oldest time.Time
	for _, d := range ds {
		if !day(d.Time).AddDate(0, 0, 1).After(cutoff) {
			old++
			if oldest.IsZero() || d.Time.Before(oldest) {
				oldest = d.Time
			}
			continue
		}
		kept = append(kept, d)
	}
	if old > 0 {
		r.m.dropped.Add(float64(old))
		r.cfg.Logger.Error("DECISIONS LOST: spilled decisions are past the retention, their partitions dropped; not replayed",
			"count", old, "oldest", oldest, "retention", r.cfg.Retention.String(), "file", seg)
	}
	return kept
}

// insertSQL inserts a JSON array of rows (one object per row, keyed by
// column) and skips the ids already stored. Every column is named, so a
// column added later with a default does not break replay, and no
// temporary table (TEMP privilege) is needed.
var insertSQL = fmt.Sprintf(`INSERT INTO decisions (%[1]s)
	SELECT %[1]s FROM jsonb_populate_recordset(NULL::decisions, $1::jsonb)
	ON CONFLICT DO NOTHING RETURNING id, time`, strings.Join(columns, ", "))

// insertRowSQL inserts one row, for the rows insertOnce retries alone.
var insertRowSQL = fmt.Sprintf("INSERT INTO decisions (%s) VALUES (%s) ON CONFLICT DO NOTHING RETURNING id, time",
	strings.Join(columns, ", "), placeholders(len(columns)))

// insertOnce inserts the decisions whose id is not stored yet. Rows
// PostgreSQL refuses as data are inserted one by one so that one bad row
// loses only itself.
func (r *PGRecorder) insertOnce(ctx context.Context, ds []*Decision) (int, error) {
	if err := ensurePartitions(ctx, r.cfg.Pool, daysOf(ds)); err != nil {
		return 0, err
	}
	rows, err := rowsOf(ds)
	if err != nil {
		return 0, err
	}
	objs := make([]map[string]any, len(rows))
	for i, row := range rows {
		o := make(map[string]any, len(columns))
		for j, c := range columns {
			o[c] = row[j] // pgtype.UUID marshals as its text form
		}
		objs[i] = o
	}
	payload, err := json.Marshal(objs)
	if err != nil {
		return 0, err
	}
	n := 0
	err = pgx.BeginFunc(ctx, r.cfg.Pool, func(tx pgx.Tx) error {
		ids, err := insertedIDs(ctx, tx, insertSQL, string(payload))
		if err != nil {
			return err
		}
		n = len(ids)
		return addCounts(ctx, tx, inserted(ds, ids))
	})
	if isDataError(err) {
		return r.insertEach(ctx, ds, rows)
	}
	return n, err
}

// rowKey is a stored row's key, (id, time).
type rowKey struct {
	id   uuid.UUID
	time int64 // µs since the epoch, as stored
}

// insertedIDs runs an insert that returns the keys of the rows it
// inserted, each with how many times.
func insertedIDs(ctx context.Context, tx pgx.Tx, sql string, args ...any) (map[rowKey]int, error) {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	keys := map[rowKey]int{}
	var id string
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&id, &at}, func() error {
		u, err := uuid.Parse(id)
		keys[rowKey{u, at.UnixMicro()}]++
		return err
	})
	return keys, err
}

// inserted are the decisions of ds that the insert stored, each once (a
// spill file may hold a decision twice; the insert stores it once): only
// those are counted, the others were stored, and counted, already.
func inserted(ds []*Decision, keys map[rowKey]int) []*Decision {
	var out []*Decision
	for _, d := range ds {
		u, err := uuid.Parse(d.ID)
		k := rowKey{u, d.Time.UnixMicro()}
		if err == nil && keys[k] > 0 {
			keys[k]--
			out = append(out, d)
		}
	}
	return out
}

func (r *PGRecorder) insertEach(ctx context.Context, ds []*Decision, rows [][]any) (int, error) {
	n := 0
	for i, row := range rows {
		var ids map[rowKey]int
		err := pgx.BeginFunc(ctx, r.cfg.Pool, func(tx pgx.Tx) error {
			var err error
			if ids, err = insertedIDs(ctx, tx, insertRowSQL, row...); err != nil {
				return err
			}
			return addCounts(ctx, tx, inserted(ds[i:i+1], ids))
		})
		switch {
		case isDataError(err):
			r.drop(1, fmt.Errorf("decision %s refused by the database: %w", ds[i].ID, err))
		case err != nil:
			return n, err
		default:
			n += len(ids)
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
