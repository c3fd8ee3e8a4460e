package decisions

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A spool is the spill directory: append-only segment files of one JSON
// decision per line. Appends go to the current segment; replay first
// closes it (rotate), so it only ever reads files nobody writes to, and
// removes a file only after its rows are committed. A new process never
// appends to an old file, so only the last line of a file can be torn by a
// crash.
//
// No fsync ever runs under mu: a request spilling one decision (queue
// full) must not wait for the writer's fsync of a batch, nor for a
// rotation's. A segment leaving its place as current is detached under
// mu and synced and closed outside it.
type spool struct {
	dir     string
	maxSize int64 // rotate the current segment beyond this size

	mu  sync.Mutex
	cur *segment // nil until the next append
	seq int      // files made by this process

	bytes atomic.Int64 // bytes in all segments, for the gauge
}

// segment is one spill file being written.
type segment struct {
	f    *os.File
	size int64 // bytes in the file (mu)
	// written counts the writes, synced the writes an fsync covered (mu):
	// the segment is dirty while synced < written.
	written, synced uint64
	// done is closed once the detached segment is synced and closed, with
	// closeErr the result.
	done     chan struct{}
	closeErr error
}

// finish syncs and closes a detached segment; only the goroutine that
// detached it calls it.
func (g *segment) finish() error {
	err := fsync(g.f)
	if cerr := g.f.Close(); err == nil {
		err = cerr
	}
	g.closeErr = err
	close(g.done)
	return err
}

const segmentExt = ".jsonl"

// fsync is (*os.File).Sync; tests replace it.
var fsync = (*os.File).Sync

func openSpool(dir string, maxSize int64) (*spool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("decision spill directory: %w", err)
	}
	s := &spool{dir: dir, maxSize: maxSize}
	segs, err := s.segments()
	if err != nil {
		return nil, err
	}
	for _, p := range segs {
		if fi, err := os.Stat(p); err == nil {
			s.bytes.Add(fi.Size())
		}
	}
	return s, nil
}

// append writes whole lines to the current segment, and fsyncs them when
// sync is set. written reports whether the lines are in the file: when
// they are, err is only a failure to make them durable (they will still be
// replayed, they are not lost). A failed write is cut off again and the
// segment closed, so no partial line stays in the middle of a file.
func (s *spool) append(lines []byte, sync bool) (written bool, err error) {
	g, gen, detached, err := s.write(lines)
	switch {
	case err != nil && g != nil:
		// The failed write is cut off; earlier lines stay and are synced.
		_ = g.f.Truncate(g.size)
		_ = g.finish()
		return false, err
	case err != nil:
		return false, err
	case detached:
		// Past the size bound: this append closes the file, and that
		// syncs it whatever sync says.
		return true, g.finish()
	case sync:
		return true, s.syncSegment(g, gen)
	}
	return true, nil
}

// write appends lines under mu. It returns the segment written, the
// generation of this write and whether the segment was detached (full);
// on a failed write, the detached segment, if one was open.
func (s *spool) write(lines []byte) (g *segment, gen uint64, detached bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		// Names sort in creation order; the pid keeps two processes sharing
		// a directory by mistake from sharing a file, and seq two files of
		// one process made within a clock tick.
		s.seq++
		name := fmt.Sprintf("spill-%020d-%d-%d%s", time.Now().UnixNano(), os.Getpid(), s.seq, segmentExt)
		f, err := os.OpenFile(filepath.Join(s.dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
		if err != nil {
			return nil, 0, false, err
		}
		s.cur = &segment{f: f, done: make(chan struct{})}
	}
	g = s.cur
	n, err := g.f.Write(lines)
	if err != nil {
		s.cur = nil
		return g, 0, true, err
	}
	g.size += int64(n)
	g.written++
	s.bytes.Add(int64(n))
	if g.size >= s.maxSize {
		s.cur = nil
		return g, g.written, true, nil
	}
	return g, g.written, false, nil
}

// syncSegment fsyncs g, outside mu, and records which writes that covers.
// A segment detached meanwhile is synced by whoever detached it: wait for
// that.
func (s *spool) syncSegment(g *segment, gen uint64) error {
	if err := fsync(g.f); err != nil {
		if errors.Is(err, os.ErrClosed) {
			<-g.done
			return g.closeErr
		}
		return err
	}
	s.mu.Lock()
	g.synced = max(g.synced, gen)
	s.mu.Unlock()
	return nil
}

// sync fsyncs what append wrote without sync. The writes stay dirty until
// an fsync succeeds.
func (s *spool) sync() error {
	s.mu.Lock()
	g := s.cur
	var gen uint64
	if g != nil {
		gen = g.written
		if g.synced >= gen {
			g = nil
		}
	}
	s.mu.Unlock()
	if g == nil {
		return nil
	}
	return s.syncSegment(g, gen)
}

// rotate detaches the current segment and syncs and closes it, so that
// replay can read it.
func (s *spool) rotate() error {
	s.mu.Lock()
	g := s.cur
	s.cur = nil
	s.mu.Unlock()
	if g == nil {
		return nil
	}
	return g.finish()
}

// segments returns the closed segment files, oldest first.
func (s *spool) segments() ([]string, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	current := ""
	if s.cur != nil {
		current = s.cur.f.Name()
	}
	s.mu.Unlock()
	var out []string
	for _, e := range entries {
		p := filepath.Join(s.dir, e.Name())
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), "spill-") && strings.HasSuffix(e.Name(), segmentExt) && p != current {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

// pending reports whether anything is spilled, current segment included.
func (s *spool) pending() bool { return s.bytes.Load() > 0 }

// remove deletes a segment whose rows are all committed.
func (s *spool) remove(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	s.bytes.Add(-fi.Size())
	return nil
}

// close syncs and closes the current segment. An append after it starts a
// new file (not synced by anyone: it survives the process, not a crash of
// the machine).
func (s *spool) close() error { return s.rotate() }

// readSegment calls fn with the decisions of a segment in chunks of at most
// n. Lines that do not parse (a line torn by a crash, or damage) are
// skipped and counted in bad.
func readSegment(path string, n int, fn func([]*Decision) error) (bad int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	chunk := make([]*Decision, 0, n)
	for {
		line, rerr := r.ReadBytes('\n')
		if len(line) > 0 && len(bytes.TrimSpace(line)) > 0 {
			d := new(Decision)
			if json.Unmarshal(line, d) != nil || d.ID == "" {
				bad++
			} else {
				// Files written before normalize cut times to
				// microseconds hold nanoseconds.
				d.Time = d.Time.Truncate(time.Microsecond)
				chunk = append(chunk, d)
			}
		}
		if len(chunk) == n || (rerr != nil && len(chunk) > 0) {
			if err := fn(chunk); err != nil {
				return bad, err
			}
			chunk = chunk[:0]
		}
		if errors.Is(rerr, io.EOF) {
			return bad, nil
		}
		if rerr != nil {
			return bad, rerr
		}
	}
}
