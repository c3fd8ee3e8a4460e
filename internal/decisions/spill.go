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
type spool struct {
	dir     string
	maxSize int64 // rotate the current segment beyond this size

	mu    sync.Mutex
	f     *os.File // current segment; nil until the next append
	size  int64    // bytes in the current segment
	dirty bool     // written since the last fsync
	seq   int      // files made by this process

	bytes atomic.Int64 // bytes in all segments, for the gauge
}

const segmentExt = ".jsonl"

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
// sync is set. A failed write is cut off again and the segment closed, so
// no partial line stays in the middle of a file. The fsync runs outside the
// lock: a request spilling one decision (queue full) must not wait for the
// writer's fsync of a batch.
func (s *spool) append(lines []byte, sync bool) error {
	f, err := s.write(lines, sync)
	if err != nil || !sync || f == nil {
		return err
	}
	// Closed meanwhile (rotated): closing synced it.
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}

// write appends lines and returns the file to fsync, if still open.
func (s *spool) write(lines []byte, sync bool) (*os.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		// Names sort in creation order; the pid keeps two processes sharing
		// a directory by mistake from sharing a file, and seq two files of
		// one process made within a clock tick.
		s.seq++
		name := fmt.Sprintf("spill-%020d-%d-%d%s", time.Now().UnixNano(), os.Getpid(), s.seq, segmentExt)
		f, err := os.OpenFile(filepath.Join(s.dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
		if err != nil {
			return nil, err
		}
		s.f, s.size = f, 0
	}
	n, err := s.f.Write(lines)
	if err != nil {
		_ = s.f.Truncate(s.size)
		_ = s.f.Close()
		s.f = nil
		return nil, err
	}
	s.size += int64(n)
	s.bytes.Add(int64(n))
	if s.size >= s.maxSize {
		return nil, s.closeCurrent()
	}
	// The caller's fsync covers earlier unsynced appends too.
	s.dirty = !sync
	return s.f, nil
}

// sync fsyncs what append wrote without sync.
func (s *spool) sync() error {
	s.mu.Lock()
	f := s.f
	if !s.dirty {
		f = nil
	}
	s.dirty = false
	s.mu.Unlock()
	if f == nil {
		return nil
	}
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}

// rotate closes the current segment, so that replay can read it.
func (s *spool) rotate() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeCurrent()
}

func (s *spool) closeCurrent() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Sync()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	s.f, s.dirty = nil, false
	return err
}

// segments returns the closed segment files, oldest first.
func (s *spool) segments() ([]string, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	current := ""
	if s.f != nil {
		current = s.f.Name()
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

func (s *spool) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeCurrent()
}

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
