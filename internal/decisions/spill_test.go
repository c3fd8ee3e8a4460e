package decisions

import (
	"encoding/json"
	"os"
	"path/filepath"
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
	if err := s.append([]byte("a\n"), true); err != nil {
		t.Fatal(err)
	}
	if segs, _ := s.segments(); len(segs) != 0 {
		t.Fatalf("the file being written is listed for replay: %v", segs)
	}
	if err := s.rotate(); err != nil {
		t.Fatal(err)
	}
	if err := s.append([]byte("b\n"), false); err != nil {
		t.Fatal(err)
	}
	segs, _ := s.segments()
	if len(segs) != 1 || s.bytes.Load() != 4 {
		t.Fatalf("segments %v, bytes %d", segs, s.bytes.Load())
	}
	// Past the size bound the file closes by itself.
	if err := s.append(make([]byte, 100), false); err != nil {
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
