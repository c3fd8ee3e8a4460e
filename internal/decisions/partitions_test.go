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
