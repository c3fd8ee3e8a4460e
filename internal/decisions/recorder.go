package decisions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// RecorderConfig configures a PGRecorder. Zero values take the defaults.
type RecorderConfig struct {
	Pool *pgxpool.Pool
	// SpillDir holds the spill files (<state-dir>/decisions).
	SpillDir string
	// QueueSize bounds the decisions waiting in memory (10,000).
	QueueSize int
	// BatchRows is the most rows one COPY writes (1,000); a batch is also
	// written every FlushInterval (200ms), whatever its size.
	BatchRows     int
	FlushInterval time.Duration
	// WriteTimeout bounds one batch write (5s); past it the batch spills.
	WriteTimeout time.Duration
	// RetryInterval is how often spilled decisions are replayed, or the
	// database probed while it is down (1s).
	RetryInterval time.Duration
	// MaxSpillFileBytes starts a new spill file beyond this size (64 MiB), so
	// that replay commits and removes files as it goes.
	MaxSpillFileBytes int64
	// Retention is the partitions' retention (--decision-retention):
	// replay skips, and counts as dropped, spilled decisions older than it
	// rather than create their dropped partition again. Zero: no limit.
	Retention  time.Duration
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

func (c *RecorderConfig) defaults() {
	if c.QueueSize <= 0 {
		c.QueueSize = 10_000
	}
	if c.BatchRows <= 0 {
		c.BatchRows = 1_000
	}
	if c.FlushInterval <= 0 {
		c.FlushInterval = 200 * time.Millisecond
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 5 * time.Second
	}
	if c.RetryInterval <= 0 {
		c.RetryInterval = time.Second
	}
	if c.MaxSpillFileBytes <= 0 {
		c.MaxSpillFileBytes = 64 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// PGRecorder writes decisions to PostgreSQL in batches, off the request
// path. When the database fails, batches go to an append-only spill file
// and are replayed, each decision once, when it is back; when the queue is
// full, decisions go to the spill file too. A decision is lost only if the
// spill file cannot be written, and that is logged and counted.
type PGRecorder struct {
	cfg   RecorderConfig
	queue chan *Decision
	spool *spool
	m     *recorderMetrics

	// mu orders Record against Close: once closed is set, no decision
	// enters the queue the writer has already drained.
	mu     sync.RWMutex
	closed bool

	// down is set when a write failed; batches then go straight to the
	// spill file until a replay (or probe) succeeds.
	down atomic.Bool

	stop          chan context.Context
	writerDone    chan struct{}
	cancelReplay  context.CancelFunc
	replayDone    chan struct{}
	replayNow     chan struct{}
	replayMu      sync.Mutex // one replay at a time
	lastReplayLog time.Time
	lastDownLog   time.Time // writer goroutine only
	// dropLog and syncLog limit the spill's failure lines (spilllog.go).
	dropLog, syncLog logLimiter
}

// NewPGRecorder opens the spill directory and starts the writer and the
// replayer. Spill files left by an earlier process are replayed at once.
// Close flushes and stops it.
func NewPGRecorder(cfg RecorderConfig) (*PGRecorder, error) {
	cfg.defaults()
	if cfg.Pool == nil || cfg.SpillDir == "" {
		return nil, errors.New("decisions: a recorder needs a pool and a spill directory")
	}
	sp, err := openSpool(cfg.SpillDir, cfg.MaxSpillFileBytes)
	if err != nil {
		return nil, err
	}
	r := &PGRecorder{
		cfg:        cfg,
		queue:      make(chan *Decision, cfg.QueueSize),
		spool:      sp,
		stop:       make(chan context.Context, 1),
		writerDone: make(chan struct{}),
		replayDone: make(chan struct{}),
		replayNow:  make(chan struct{}, 1),
	}
	r.m = newRecorderMetrics(cfg.Registerer,
		func() float64 { return float64(len(r.queue)) },
		func() float64 { return float64(r.spool.bytes.Load()) })
	ctx, cancel := context.WithCancel(context.Background())
	r.cancelReplay = cancel
	go r.writeLoop()
	go r.replayLoop(ctx)
	return r, nil
}

// Record queues d and returns at once. With the queue full, or after
// Close, d is appended to the spill file instead, never with an fsync on
// the request's path: the writer syncs it within FlushInterval, or Close
// at its end.
func (r *PGRecorder) Record(d *Decision) {
	normalize(d)
	r.m.queued.Inc()
	r.mu.RLock()
	if !r.closed {
		select {
		case r.queue <- d:
			r.mu.RUnlock()
			return
		default:
		}
	}
	r.mu.RUnlock()
	r.spill([]*Decision{d}, false)
}

// normalize makes sure a decision can be stored: the id is the key and
// the verdict is checked by the table.
func normalize(d *Decision) {
	if d.Time.IsZero() {
		d.Time = time.Now().UTC()
	}
	// PostgreSQL keeps microseconds. COPY cuts the rest off, while replay's
	// JSON path rounds it; the key holds the time, so a batch replayed after
	// a commit it could not confirm would otherwise be stored twice.
	d.Time = d.Time.Truncate(time.Microsecond)
	if _, err := uuid.Parse(d.ID); err != nil {
		d.ID = uuid.Must(uuid.NewV7()).String()
	}
	if !validVerdict(string(d.Verdict)) {
		d.Verdict = VerdictError
	}
}

// Close writes what is queued, to the database if it answers before ctx
// ends and to the spill file otherwise, and stops. Decisions recorded
// after Close go to the spill file, for the next process to replay.
func (r *PGRecorder) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.stop <- ctx
	<-r.writerDone
	// A replay in progress rolls back; its file stays for the next start.
	r.cancelReplay()
	<-r.replayDone
	return r.spool.close()
}

func (r *PGRecorder) writeLoop() {
	defer close(r.writerDone)
	tick := time.NewTicker(r.cfg.FlushInterval)
	defer tick.Stop()
	batch := make([]*Decision, 0, r.cfg.BatchRows)
	flush := func(ctx context.Context) {
		if len(batch) > 0 {
			r.flush(ctx, batch)
			batch = make([]*Decision, 0, r.cfg.BatchRows)
		}
	}
	for {
		select {
		case d := <-r.queue:
			batch = append(batch, d)
			if len(batch) >= r.cfg.BatchRows {
				flush(context.Background())
			}
		case <-tick.C:
			flush(context.Background())
			if err := r.spool.sync(); err != nil {
				r.syncFailed(0, err)
			}
		case ctx := <-r.stop:
		drain:
			for {
				select {
				case d := <-r.queue:
					batch = append(batch, d)
					if len(batch) >= r.cfg.BatchRows {
						flush(ctx)
					}
				default:
					break drain
				}
			}
			flush(ctx)
			return
		}
	}
}

// flush writes one batch to the database, or spills it.
func (r *PGRecorder) flush(ctx context.Context, batch []*Decision) {
	if !r.down.Load() && ctx.Err() == nil {
		start := time.Now()
		err := r.copy(ctx, batch)
		if err == nil {
			r.m.batch.Observe(time.Since(start).Seconds())
			r.m.written.Add(float64(len(batch)))
			return
		}
		// The probe clears down as soon as the database answers; while
		// writes keep failing anyway, warn at most every 30s.
		if !r.down.Swap(true) && time.Since(r.lastDownLog) >= 30*time.Second {
			r.lastDownLog = time.Now()
			r.cfg.Logger.Warn("writing decisions to the database failed; spilling them to disk until it is back",
				"error", err, "rows", len(batch), "spill_dir", r.cfg.SpillDir)
		}
		select {
		case r.replayNow <- struct{}{}:
		default:
		}
	}
	r.spill(batch, true)
}

func (r *PGRecorder) copy(ctx context.Context, batch []*Decision) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.WriteTimeout)
	defer cancel()
	return copyBatch(ctx, r.cfg.Pool, batch)
}

// copyBatch writes a batch with COPY, creating missing day partitions once.
func copyBatch(ctx context.Context, pool *pgxpool.Pool, batch []*Decision) error {
	err := copyRows(ctx, pool, batch)
	if isNoPartition(err) {
		if err = ensurePartitions(ctx, pool, daysOf(batch)); err == nil {
			err = copyRows(ctx, pool, batch)
		}
	}
	return err
}

func rowsOf(batch []*Decision) ([][]any, error) {
	rows := make([][]any, len(batch))
	for i, d := range batch {
		var err error
		if rows[i], err = row(d); err != nil {
			return nil, fmt.Errorf("decision %s: %w", d.ID, err)
		}
	}
	return rows, nil
}

// spill appends decisions to the spill file; only if that fails are they
// lost, loudly.
func (r *PGRecorder) spill(ds []*Decision, sync bool) {
	var buf []byte
	n := 0
	for _, d := range ds {
		b, err := json.Marshal(d)
		if err != nil {
			// Cannot happen for this struct; counted rather than hidden.
			r.drop(1, err)
			continue
		}
		buf = append(append(buf, b...), '\n')
		n++
	}
	written, err := r.spool.append(buf, sync)
	if !written {
		r.drop(n, err)
		return
	}
	// In the file, so replayed: spilled, even if it could not be synced.
	r.m.spilled.Add(float64(n))
	if err != nil {
		r.syncFailed(n, err)
	}
}

// syncFailed logs a failed fsync of the spill file about n decisions, at
// most every spillLogEvery.
func (r *PGRecorder) syncFailed(n int, err error) {
	if ok, held, heldCount := r.syncLog.allow(n); ok {
		r.cfg.Logger.Error("syncing the decision spill file failed: the decisions are in it but may not survive a crash of the machine",
			"count", n, "error", err, "spill_dir", r.cfg.SpillDir,
			"suppressed", held, "suppressed_count", heldCount)
	}
}

// drop counts n decisions lost, every one, and logs it at most every
// spillLogEvery, with the losses held back since the last line.
func (r *PGRecorder) drop(n int, err error) {
	r.m.dropped.Add(float64(n))
	if ok, held, heldCount := r.dropLog.allow(n); ok {
		r.cfg.Logger.Error("DECISIONS LOST: they could not be written to the database nor to the spill file",
			"count", n, "error", err, "spill_dir", r.cfg.SpillDir,
			"suppressed", held, "suppressed_count", heldCount)
	}
}
