package decisions

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// Many goroutines record at once; every decision is stored once.
func TestRecorderStoresEveryDecisionOnce(t *testing.T) {
	f := newFixture(t)
	r := f.recorder(t, func(c *RecorderConfig) { c.BatchRows = 100 })
	const workers, each = 20, 250
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				r.Record(decision(time.Now()))
			}
		}()
	}
	wg.Wait()
	f.waitRows(t, workers*each)
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{
		"portcullis_decisions_queued_total": workers * each, "portcullis_decisions_written_total": workers * each,
		"portcullis_decisions_spilled_total": 0, "portcullis_decisions_dropped_total": 0,
		"portcullis_decisions_queue_depth": 0, "portcullis_decisions_spill_bytes": 0,
	} {
		if got := f.counter(t, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

// What Close finds queued is written before it returns.
func TestCloseFlushes(t *testing.T) {
	f := newFixture(t)
	r := f.recorder(t, func(c *RecorderConfig) { c.FlushInterval = time.Hour; c.BatchRows = 10_000 })
	for range 500 {
		r.Record(decision(time.Now()))
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.rows(t); n != 500 {
		t.Fatalf("%d rows after Close, want 500", n)
	}
	// After Close, decisions go to the spill file for the next process.
	r.Record(decision(time.Now()))
	if got := f.counter(t, "portcullis_decisions_spilled_total"); got != 1 {
		t.Fatalf("spilled after Close = %d, want 1", got)
	}
	f.reg = prometheus.NewRegistry()
	r2 := f.recorder(t)
	f.waitRows(t, 501)
	_ = r2.Close(context.Background())
}

// A full queue spills instead of dropping or waiting; the spilled
// decisions are replayed.
func TestFullQueueSpills(t *testing.T) {
	f := newFixture(t)
	r := f.recorder(t, func(c *RecorderConfig) { c.QueueSize = 1; c.BatchRows = 1 })
	const n = 2_000
	for range n {
		r.Record(decision(time.Now()))
	}
	f.waitRows(t, n)
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	written, spilled := f.counter(t, "portcullis_decisions_written_total"), f.counter(t, "portcullis_decisions_spilled_total")
	replayed := f.counter(t, "portcullis_decisions_replayed_total")
	if spilled == 0 || written+spilled != n || replayed != spilled {
		t.Fatalf("written %d + spilled %d != %d, or replayed %d != spilled", written, spilled, n, replayed)
	}
	if got := f.counter(t, "portcullis_decisions_dropped_total"); got != 0 {
		t.Fatalf("dropped = %d", got)
	}
}

// writeSpill writes a spill file as a crashed process would leave it:
// whole lines and a torn last one.
func writeSpill(t *testing.T, dir string, ds []*Decision) string {
	t.Helper()
	var b strings.Builder
	for _, d := range ds {
		line, _ := json.Marshal(d)
		b.Write(line)
		b.WriteByte('\n')
	}
	torn, _ := json.Marshal(decision(time.Now()))
	b.Write(torn[:len(torn)/2])
	p := filepath.Join(dir, "spill-00000000000000000001-1.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A spill file left by a crash is replayed at start, each decision once,
// even when it is replayed again (a crash between commit and removal).
func TestReplayAfterCrash(t *testing.T) {
	f := newFixture(t)
	var ds []*Decision
	for i := range 120 {
		d := decision(time.Now().Add(-time.Duration(i) * time.Minute))
		if i%3 == 0 {
			denied(d, "no-latest")
		}
		ds = append(ds, d)
	}
	writeSpill(t, f.dir, ds)
	r := f.recorder(t)
	f.waitRows(t, 120)
	testutil.Eventually(t, 0, "the spill to be replayed (spill_bytes 0)", func() bool { return f.counter(t, "portcullis_decisions_spill_bytes") == 0 })
	if left, _ := os.ReadDir(f.dir); len(left) != 0 {
		t.Fatalf("spill files left after replay: %v", left)
	}
	if got := f.counter(t, "portcullis_decisions_dropped_total"); got != 1 {
		t.Fatalf("dropped = %d, want 1 (the torn line)", got)
	}

	// The same file again, as if the process died before removing it.
	writeSpill(t, f.dir, ds)
	for range 2 {
		n, err := r.Replay(context.Background())
		if err != nil || n != 0 {
			t.Fatalf("second replay inserted %d (%v), want 0", n, err)
		}
	}
	if n, _ := f.rows(t); n != 120 {
		t.Fatalf("%d rows, want 120", n)
	}
	if got := f.counter(t, "portcullis_decisions_replayed_total"); got != 120 {
		t.Fatalf("replayed = %d, want 120", got)
	}
	// The replayed rows are whole.
	var deniedRows int
	if err := f.pool.QueryRow(context.Background(),
		"SELECT count(*) FROM decisions WHERE verdict = 'denied' AND denied_by = '{no-latest}'").Scan(&deniedRows); err != nil {
		t.Fatal(err)
	}
	if deniedRows != 40 {
		t.Fatalf("%d denied rows, want 40", deniedRows)
	}
}

// While the database is down, decisions spill; when it is back they are
// replayed, and every decision is stored exactly once.
func TestOutageSpillsAndReplays(t *testing.T) {
	f := newFixture(t)
	r := f.recorder(t)
	const phase = 300
	for range phase {
		r.Record(decision(time.Now()))
	}
	f.waitRows(t, phase)

	pgtest.StopServer(t)
	restarted := false
	defer func() {
		if !restarted {
			pgtest.StartServer(t)
		}
	}()
	// Replay attempts between the spills do not cut the spill into a file
	// per attempt. The third of three wake-ups of the replayer is taken
	// only once it has finished the attempt the first one started.
	const rounds = 10
	for i := range rounds {
		for range phase / rounds {
			r.Record(decision(time.Now()))
		}
		testutil.Eventually(t, 0, "the round's decisions to spill", func() bool {
			return f.counter(t, "portcullis_decisions_spilled_total") == (i+1)*phase/rounds
		})
		for range 3 {
			r.replayNow <- struct{}{}
		}
	}
	if f.counter(t, "portcullis_decisions_spill_bytes") == 0 {
		t.Fatal("spill_bytes = 0 while decisions are spilled")
	}
	if files, _ := os.ReadDir(f.dir); len(files) != 1 {
		t.Fatalf("%d spill files during the outage, want 1", len(files))
	}
	pgtest.StartServer(t)
	restarted = true
	for range phase {
		r.Record(decision(time.Now()))
	}
	f.waitRows(t, 3*phase)
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	queued, written := f.counter(t, "portcullis_decisions_queued_total"), f.counter(t, "portcullis_decisions_written_total")
	spilled, replayed := f.counter(t, "portcullis_decisions_spilled_total"), f.counter(t, "portcullis_decisions_replayed_total")
	if queued != 3*phase || written+spilled != queued || replayed != spilled || f.counter(t, "portcullis_decisions_dropped_total") != 0 {
		t.Fatalf("queued %d, written %d, spilled %d, replayed %d", queued, written, spilled, replayed)
	}
}

// Shutdown with the database away spills what is queued; the next
// process stores it.
func TestCloseDuringOutageSpills(t *testing.T) {
	f := newFixture(t)
	r := f.recorder(t, func(c *RecorderConfig) { c.FlushInterval = time.Hour; c.BatchRows = 10_000 })
	for range 200 {
		r.Record(decision(time.Now()))
	}
	pgtest.StopServer(t)
	err := r.Close(context.Background())
	pgtest.StartServer(t)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.counter(t, "portcullis_decisions_spilled_total"); got != 200 {
		t.Fatalf("spilled = %d, want 200", got)
	}
	f.reg = prometheus.NewRegistry()
	f.recorder(t)
	f.waitRows(t, 200)
}

// Strings PostgreSQL refuses (NUL, invalid UTF-8) are cleaned, not allowed
// to make a batch fail forever.
func TestUnstorableStringsAreCleaned(t *testing.T) {
	f := newFixture(t)
	r := f.recorder(t)
	d := decision(time.Now())
	d.UserName = "ev\x00il\xff"
	d.AuditAnnotations = []AuditAnnotation{{Key: "k\x00", Value: "v\x00"}}
	d.Bindings[0].Messages = []string{"m\x00"}
	r.Record(d)
	f.waitRows(t, 1)
	var user string
	if err := f.pool.QueryRow(context.Background(), "SELECT user_name FROM decisions").Scan(&user); err != nil {
		t.Fatal(err)
	}
	if user != "evil\uFFFD" {
		t.Fatalf("user_name = %q", user)
	}
}

// A decision on a day without a partition creates it rather than fail.
func TestMissingPartitionIsCreated(t *testing.T) {
	f := newFixture(t)
	r := f.recorder(t)
	r.Record(decision(time.Now().AddDate(0, 0, 40)))
	r.Record(decision(time.Now().AddDate(0, 0, -2)))
	f.waitRows(t, 2)
	if got := f.counter(t, "portcullis_decisions_spilled_total"); got != 0 {
		t.Fatalf("spilled = %d, want 0", got)
	}
}

// Only when the spill file cannot be written is a decision dropped, and
// then it is counted.
func TestDropOnlyWhenSpillFails(t *testing.T) {
	f := newFixture(t)
	r := f.recorder(t, func(c *RecorderConfig) { c.QueueSize = 1; c.FlushInterval = time.Hour; c.BatchRows = 1000 })
	// The spill directory becomes a file: every append fails.
	if err := os.RemoveAll(f.dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		r.Record(decision(time.Now()))
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The writer takes decisions off the queue as they come, so some fit.
	dropped, written := f.counter(t, "portcullis_decisions_dropped_total"), f.counter(t, "portcullis_decisions_written_total")
	if dropped == 0 || dropped+written != 10 || f.counter(t, "portcullis_decisions_spilled_total") != 0 {
		t.Fatalf("dropped %d, written %d; want some dropped and the rest written", dropped, written)
	}
	f.waitRows(t, written)
}

// A spilled row the database refuses loses only itself, not its file.
func TestReplayDropsOnlyRefusedRows(t *testing.T) {
	f := newFixture(t)
	var ds []*Decision
	for range 5 {
		ds = append(ds, decision(time.Now()))
	}
	bad := decision(time.Now())
	bad.Verdict = "maybe" // refused by the table's CHECK
	ds = append(ds, bad)
	writeSpill(t, f.dir, ds)
	f.recorder(t)
	f.waitRows(t, 5)
	testutil.Eventually(t, 0, "the spill to be replayed (spill_bytes 0)", func() bool { return f.counter(t, "portcullis_decisions_spill_bytes") == 0 })
	if got := f.counter(t, "portcullis_decisions_dropped_total"); got != 2 {
		t.Fatalf("dropped = %d, want 2 (the refused row and the torn line)", got)
	}
}

// A replay that keeps failing does not keep the recorder on disk: once
// the database answers, decisions are written directly again.
func TestLastingReplayFailureDoesNotKeepTheRecorderDown(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// Rows of tenant 666 fail with an error no retry changes and that is
	// not a data error: the spill file holding one can never be replayed.
	if _, err := f.pool.Exec(ctx, `
		CREATE FUNCTION refuse_666() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.tenant_id = 666 THEN RAISE EXCEPTION 'refused' USING ERRCODE = 'P0001'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER refuse_666 BEFORE INSERT ON decisions FOR EACH ROW EXECUTE FUNCTION refuse_666()`); err != nil {
		t.Fatal(err)
	}
	poison := decision(time.Now())
	poison.TenantID = 666
	writeSpill(t, f.dir, []*Decision{poison})
	r := f.recorder(t)
	r.down.Store(true) // as after a failed write
	testutil.Eventually(t, 0, "the recorder to write directly again", func() bool { return !r.down.Load() })
	for range 50 {
		r.Record(decision(time.Now()))
	}
	f.waitRows(t, 50)
	if got := f.counter(t, "portcullis_decisions_written_total"); got != 50 {
		t.Fatalf("written directly = %d, want 50", got)
	}
	if _, err := r.Replay(ctx); err == nil {
		t.Fatal("the poisoned spill file replayed")
	}
}

// Replay does not need a temporary table, and names its columns: a column
// added later with a default does not break it.
func TestReplayWithoutTempAndWithANewColumn(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.pool.Exec(ctx, `ALTER TABLE decisions ADD COLUMN extra text NOT NULL DEFAULT 'x'`); err != nil {
		t.Fatal(err)
	}
	var ds []*Decision
	for range 30 {
		ds = append(ds, denied(decision(time.Now()), "no-latest"))
	}
	writeSpill(t, f.dir, ds)
	r := f.recorder(t, func(c *RecorderConfig) { c.RetryInterval = time.Hour })
	// The recorder replays what it finds when it starts, so this Replay
	// may find the work done; one replay runs at a time, so once it
	// returns, whichever ran has counted all 30.
	n, err := r.Replay(ctx)
	if replayed := f.counter(t, "portcullis_decisions_replayed_total"); err != nil || replayed != 30 || (n != 30 && n != 0) {
		t.Fatalf("replayed %d, this Replay %d (%v), want 30", replayed, n, err)
	}
	var deniedRows int
	if err := f.pool.QueryRow(ctx, "SELECT count(*) FROM decisions WHERE denied_by = '{no-latest}' AND extra = 'x' AND user_groups = '{system:authenticated}'").Scan(&deniedRows); err != nil || deniedRows != 30 {
		t.Fatalf("%d whole rows (%v), want 30", deniedRows, err)
	}
}

// Spilled decisions older than the retention are dropped, loudly, rather
// than create their dropped partition again.
func TestReplaySkipsPastRetention(t *testing.T) {
	f := newFixture(t)
	old := decision(time.Now().AddDate(0, 0, -10))
	writeSpill(t, f.dir, []*Decision{old, decision(time.Now())})
	f.recorder(t, func(c *RecorderConfig) { c.Retention = 48 * time.Hour })
	f.waitRows(t, 1)
	testutil.Eventually(t, 0, "the spill to be replayed (spill_bytes 0)", func() bool { return f.counter(t, "portcullis_decisions_spill_bytes") == 0 })
	if got := f.counter(t, "portcullis_decisions_dropped_total"); got != 2 {
		t.Fatalf("dropped = %d, want 2 (past retention, and the torn line)", got)
	}
	days, err := ListPartitions(context.Background(), f.pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range days {
		if d.Equal(day(old.Time)) {
			t.Fatalf("partition %s created for a decision past the retention", partitionName(d))
		}
	}
}

// A batch whose commit the recorder could not confirm is spilled and
// replayed through INSERT ... ON CONFLICT DO NOTHING on the key, which
// holds the time. COPY cuts a time to microseconds while the replay's JSON
// path rounds it, so a time with 500ns or more past the microsecond used
// to be stored twice.
func TestReplayOfACommittedBatchStoresItOnce(t *testing.T) {
	f := newFixture(t)
	r := f.recorder(t)
	ctx := context.Background()
	base := time.Now().UTC().Truncate(time.Microsecond)
	var ds []*Decision
	for _, ns := range []time.Duration{0, 499, 500, 700, 999} {
		d := decision(base.Add(ns))
		normalize(d)
		ds = append(ds, d)
	}
	if err := copyBatch(ctx, f.pool, ds); err != nil {
		t.Fatal(err)
	}
	if n, err := r.insertOnce(ctx, ds); err != nil || n != 0 {
		t.Fatalf("replay inserted %d rows (%v), want 0: every decision is stored already", n, err)
	}
	rows, err := rowsOf(ds)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := r.insertEach(ctx, ds, rows); err != nil || n != 0 {
		t.Fatalf("row by row, replay inserted %d rows (%v), want 0", n, err)
	}
	if n, distinct := f.rows(t); n != len(ds) || distinct != len(ds) {
		t.Fatalf("%d rows, %d distinct ids; want %d of each", n, distinct, len(ds))
	}
}
