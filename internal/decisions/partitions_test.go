package decisions

import (
	"context"
	"testing"
	"time"
)

// Partitions are created ahead, and those past the retention are dropped
// with their rows; recent ones stay.
func TestPartitionsAheadAndRetention(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 13, 0, 0, 0, time.UTC)
	p := &Partitions{Pool: f.pool, Retention: 30 * 24 * time.Hour, Ahead: 2, Now: func() time.Time { return now }}

	// Forty days of history, one decision a day.
	for i := range 40 {
		f.insert(t, decision(now.AddDate(0, 0, -i)))
	}
	if err := p.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	days, err := ListPartitions(ctx, f.pool)
	if err != nil {
		t.Fatal(err)
	}
	// [now-30d, now] is kept: the partition of 2026-10-24 ends after the
	// cutoff 2026-10-24T13:00 and stays; 2026-10-23 and older are dropped.
	first, last := days[0], days[len(days)-1]
	if want := time.Date(2026, 10, 24, 0, 0, 0, 0, time.UTC); !first.Equal(want) {
		t.Errorf("oldest partition %s, want %s", first, want)
	}
	if want := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC); !last.Equal(want) {
		t.Errorf("newest partition %s, want %s (today + 2)", last, want)
	}
	if len(days) != 33 {
		t.Errorf("%d partitions, want 33 contiguous days", len(days))
	}
	var n int
	var oldest time.Time
	if err := f.pool.QueryRow(ctx, "SELECT count(*), min(time) FROM decisions").Scan(&n, &oldest); err != nil {
		t.Fatal(err)
	}
	if n != 31 || oldest.Before(now.AddDate(0, 0, -31)) {
		t.Errorf("%d rows left, oldest %s; want 31 from 2026-10-24", n, oldest)
	}

	// Running again changes nothing.
	if err := p.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	again, _ := ListPartitions(ctx, f.pool)
	if len(again) != len(days) {
		t.Errorf("second run: %d partitions, want %d", len(again), len(days))
	}

	// A day later, one more is created and one more dropped.
	now = now.AddDate(0, 0, 1)
	if err := p.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	days, _ = ListPartitions(ctx, f.pool)
	if !days[0].Equal(time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC)) || !days[len(days)-1].Equal(time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("after a day: partitions %s..%s", days[0], days[len(days)-1])
	}
}

// No default partition exists for retention to miss.
func TestNoDefaultPartition(t *testing.T) {
	f := newFixture(t)
	var n int
	if err := f.pool.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_partitioned_table WHERE partrelid = 'decisions'::regclass AND partdefid <> 0").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatal("decisions has a default partition")
	}
}

func TestRetentionShorterThanADayIsRefused(t *testing.T) {
	p := &Partitions{Retention: time.Hour}
	if err := p.Maintain(context.Background()); err == nil {
		t.Fatal("Maintain with a 1h retention succeeded")
	}
}

// A long reader of decisions (a stats query, a dashboard) neither blocks
// the creation of a partition nor, through the DDL waiting for it, the
// COPY of today's rows. A lock that does conflict makes creation fail
// fast, and it is retried.
func TestPartitionDDLDoesNotBlockWrites(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.insert(t, decision(time.Now()))

	reader, err := f.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Release()
	if _, err := reader.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := reader.QueryRow(ctx, "SELECT count(*) FROM decisions").Scan(&n); err != nil {
		t.Fatal(err)
	}

	created := make(chan error, 1)
	go func() { created <- ensurePartitions(ctx, f.pool, []time.Time{time.Now().AddDate(0, 0, 20)}) }()
	select {
	case err := <-created:
		if err != nil {
			t.Fatalf("creating a partition beside a reader: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("creating a partition waits for a reader of decisions")
	}
	copyPrompt(t, f)

	// SHARE UPDATE EXCLUSIVE conflicts with ATTACH but not with COPY:
	// creation gives up within the lock timeout, writes go on.
	if _, err := reader.Exec(ctx, "LOCK TABLE decisions IN SHARE UPDATE EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = ensurePartitions(ctx, f.pool, []time.Time{time.Now().AddDate(0, 0, 21)})
	if err == nil || time.Since(start) > 3*time.Second {
		t.Fatalf("creating a partition against a conflicting lock: %v after %s; want a lock timeout at once", err, time.Since(start))
	}
	copyPrompt(t, f)
	if _, err := reader.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	// Retried, it succeeds.
	if err := ensurePartitions(ctx, f.pool, []time.Time{time.Now().AddDate(0, 0, 21)}); err != nil {
		t.Fatal(err)
	}
	f.insert(t, decision(time.Now().AddDate(0, 0, 21)))
}

// copyPrompt checks that a COPY of today's rows completes in a few seconds.
func copyPrompt(t *testing.T, f *fixture) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	d := decision(time.Now())
	normalize(d)
	if err := copyBatch(ctx, f.pool, []*Decision{d}); err != nil {
		t.Fatalf("COPY of today's rows beside partition DDL: %v", err)
	}
}

// Dropping a partition past the retention beside a long reader gives up
// fast (the reader keeps it) and finishes on a later run; a partition left
// detached but not dropped is dropped too.
func TestPartitionDropBesideReader(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	now := time.Now().UTC()
	p := &Partitions{Pool: f.pool, Retention: 48 * time.Hour, Ahead: 1, Now: func() time.Time { return now }}
	old := now.AddDate(0, 0, -5)
	f.insert(t, decision(old), decision(now))

	reader, err := f.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Release()
	if _, err := reader.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := reader.QueryRow(ctx, "SELECT count(*) FROM decisions").Scan(&n); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = p.Maintain(ctx)
	if time.Since(start) > 5*time.Second {
		t.Fatalf("maintenance beside a reader took %s", time.Since(start))
	}
	copyPrompt(t, f)
	if _, err := reader.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Logf("first run, beside the reader: %v", err)
	}
	if err := p.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := f.pool.QueryRow(ctx, "SELECT count(*) FROM pg_class WHERE relname = $1", partitionName(old)).Scan(&left); err != nil || left != 0 {
		t.Fatalf("partition %s still there (%d, %v)", partitionName(old), left, err)
	}

	// Detached by a run that died before the DROP: dropped by the next.
	f.insert(t, decision(now.AddDate(0, 0, -4)))
	if _, err := f.pool.Exec(ctx, "ALTER TABLE decisions DETACH PARTITION "+partitionName(now.AddDate(0, 0, -4))); err != nil {
		t.Fatal(err)
	}
	if err := p.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.pool.QueryRow(ctx, "SELECT count(*) FROM pg_class WHERE relname = $1", partitionName(now.AddDate(0, 0, -4))).Scan(&left); err != nil || left != 0 {
		t.Fatalf("detached partition still there (%d, %v)", left, err)
	}
}

// A partition made by attaching a table has each of the parent's indexes
// once, attached to the parent's, and the parent's constraints.
func TestAttachedPartitionMatchesTheParent(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	d := time.Now().AddDate(0, 0, 30)
	if err := ensurePartitions(ctx, f.pool, []time.Time{d}); err != nil {
		t.Fatal(err)
	}
	var parentIdx, partIdx, attachedIdx int
	err := f.pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM pg_index WHERE indrelid = 'decisions'::regclass),
		       (SELECT count(*) FROM pg_index WHERE indrelid = to_regclass($1)),
		       (SELECT count(*) FROM pg_index i JOIN pg_inherits h ON h.inhrelid = i.indexrelid WHERE i.indrelid = to_regclass($1))`,
		partitionName(d)).Scan(&parentIdx, &partIdx, &attachedIdx)
	if err != nil {
		t.Fatal(err)
	}
	if parentIdx == 0 || partIdx != parentIdx || attachedIdx != parentIdx {
		t.Fatalf("parent has %d indexes, the partition %d, %d of them attached", parentIdx, partIdx, attachedIdx)
	}
	bad := decision(d)
	bad.Verdict = "maybe"
	if err := copyBatch(ctx, f.pool, []*Decision{bad}); err == nil {
		t.Fatal("the partition accepted a verdict the table's CHECK refuses")
	}
}
