package decisions

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

func TestReadSegment(t *testing.T) {
	line := func() string {
		b, _ := json.Marshal(decision(time.Now()))
		return string(b)
	}
	for _, tt := range []struct {
		name              string
		content           string
		wantGood, wantBad int
	}{
		{"whole lines", line() + "\n" + line() + "\n", 2, 0},
		{"torn last line", line() + "\n" + line()[:40], 1, 1},
		{"last line whole but its newline lost", line() + "\n" + line(), 2, 0},
		{"damage in the middle", line() + "\n{\"ID\":\n" + line() + "\n", 2, 1},
		{"blank lines", "\n" + line() + "\n\n", 1, 0},
		{"a line without an id", "{}\n" + line() + "\n", 1, 1},
		{"empty file", "", 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "spill-1-1.jsonl")
			if err := os.WriteFile(p, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			good, calls := 0, 0
			bad, err := readSegment(p, 1, func(ds []*Decision) error {
				good += len(ds)
				calls++
				return nil
			})
			if err != nil || good != tt.wantGood || bad != tt.wantBad || calls != tt.wantGood {
				t.Fatalf("good %d in %d calls, bad %d, err %v; want %d good, %d bad", good, calls, bad, err, tt.wantGood, tt.wantBad)
			}
		})
	}
}

// Appends are whole lines in one file until it is rotated; a new file is
// started after, and sizes are accounted.
func TestSpoolRotation(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpool(dir, 64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.append([]byte("a\n"), true); err != nil {
		t.Fatal(err)
	}
	if segs, _ := s.segments(); len(segs) != 0 {
		t.Fatalf("the file being written is listed for replay: %v", segs)
	}
	if err := s.rotate(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.append([]byte("b\n"), false); err != nil {
		t.Fatal(err)
	}
	segs, _ := s.segments()
	if len(segs) != 1 || s.bytes.Load() != 4 {
		t.Fatalf("segments %v, bytes %d", segs, s.bytes.Load())
	}
	// Past the size bound the file closes by itself.
	if _, err := s.append(make([]byte, 100), false); err != nil {
		t.Fatal(err)
	}
	if segs, _ := s.segments(); len(segs) != 2 {
		t.Fatalf("segments after a large append: %v", segs)
	}
	if err := s.remove(segs[0]); err != nil {
		t.Fatal(err)
	}
	if s.bytes.Load() != 102 {
		t.Fatalf("bytes after removal = %d", s.bytes.Load())
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	// A new process counts what is left.
	s2, err := openSpool(dir, 64)
	if err != nil || s2.bytes.Load() != 102 || !s2.pending() {
		t.Fatalf("reopened: %d bytes, %v", s2.bytes.Load(), err)
	}
}

// setFsync replaces fsync for the test.
func setFsync(t *testing.T, fn func(*os.File) error) {
	t.Helper()
	old := fsync
	fsync = fn
	t.Cleanup(func() { fsync = old })
}

// An fsync (a rotation, the writer's batch) never holds the spool's lock:
// a request spilling a decision meanwhile does not wait for it.
func TestSpoolFsyncOutsideTheLock(t *testing.T) {
	s, err := openSpool(t.TempDir(), 64)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	entered := make(chan struct{}, 10)
	setFsync(t, func(f *os.File) error {
		entered <- struct{}{}
		<-release
		return f.Sync()
	})
	defer close(release)
	for _, start := range []func(){
		func() { _ = s.rotate() },                            // replay closing the file
		func() { _, _ = s.append(make([]byte, 100), false) }, // a rotation by size
		func() { _, _ = s.append([]byte("batch\n"), true) },  // the writer's batch
	} {
		if _, err := s.append([]byte("a\n"), false); err != nil {
			t.Fatal(err)
		}
		go start()
		<-entered
		done := make(chan error, 1)
		go func() { _, err := s.append([]byte("b\n"), false); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("an append waited for an fsync")
		}
	}
}

// A failed fsync leaves the writes dirty, so the next sync tries again;
// lines written to a file that then fails to close are spilled, not
// dropped.
func TestSpoolFailedFsync(t *testing.T) {
	s, err := openSpool(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var fail atomic.Bool
	var calls atomic.Int64
	fail.Store(true)
	setFsync(t, func(f *os.File) error {
		calls.Add(1)
		if fail.Load() {
			return errors.New("EIO")
		}
		return f.Sync()
	})
	if _, err := s.append([]byte("a\n"), false); err != nil {
		t.Fatal(err)
	}
	written, err := s.append([]byte("b\n"), true)
	if !written || err == nil {
		t.Fatalf("append with a failing fsync: written %v, err %v", written, err)
	}
	fail.Store(false)
	calls.Store(0)
	if err := s.sync(); err != nil || calls.Load() != 1 {
		t.Fatalf("sync after a failed fsync: %d fsyncs (%v), want 1", calls.Load(), err)
	}
	if err := s.sync(); err != nil || calls.Load() != 1 {
		t.Fatalf("sync with nothing new: %d fsyncs (%v), want none more", calls.Load(), err)
	}

	// Through the recorder: a file that cannot be closed after its lines
	// are written counts them as spilled.
	fail.Store(true)
	f := newFixture(t)
	r := f.recorder(t, func(c *RecorderConfig) { c.MaxSpillFileBytes = 1 })
	r.spill([]*Decision{decision(time.Now()), decision(time.Now())}, true)
	if d, sp := f.counter(t, "portcullis_decisions_dropped_total"), f.counter(t, "portcullis_decisions_spilled_total"); d != 0 || sp != 2 {
		t.Fatalf("dropped %d, spilled %d; want 0 and 2", d, sp)
	}
	fail.Store(false)
	f.waitRows(t, 2)
	_ = r.Close(context.Background())
}
