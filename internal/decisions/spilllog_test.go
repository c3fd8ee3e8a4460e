package decisions

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a log sink for the test and the recorder's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// lines returns the JSON log lines whose message starts with prefix.
func (w *lockedBuffer) lines(t *testing.T, prefix string) []map[string]any {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(w.b.String()), "\n") {
		var m map[string]any
		if l == "" {
			continue
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if msg, _ := m["msg"].(string); strings.HasPrefix(msg, prefix) {
			out = append(out, m)
		}
	}
	return out
}

// A full spill disk fails every flush: the loss is logged once, then once
// per spillLogEvery with what was held back, and every decision is still
// counted.
func TestSpillFailureLogIsRateLimited(t *testing.T) {
	var logs lockedBuffer
	f := newFixture(t)
	r := f.recorder(t, func(c *RecorderConfig) {
		c.FlushInterval = time.Hour
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	// The spill directory becomes a file: every append fails.
	if err := os.RemoveAll(f.dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	r.dropLog.mu.Lock()
	r.dropLog.now = func() time.Time { return clock }
	r.dropLog.mu.Unlock()
	batch := func() []*Decision { return []*Decision{decision(time.Now()), decision(time.Now())} }

	for range 10 {
		r.spill(batch(), true)
	}
	clock = clock.Add(spillLogEvery - time.Second)
	r.spill(batch(), true)
	lost := logs.lines(t, "DECISIONS LOST")
	if len(lost) != 1 || lost[0]["count"] != 2.0 || lost[0]["suppressed"] != 0.0 {
		t.Fatalf("lines within %s: %v", spillLogEvery, lost)
	}
	if got := f.counter(t, "portcullis_decisions_dropped_total"); got != 22 {
		t.Fatalf("dropped = %d, want 22: every decision counted", got)
	}

	clock = clock.Add(time.Second)
	r.spill(batch(), true)
	lost = logs.lines(t, "DECISIONS LOST")
	if len(lost) != 2 || lost[1]["suppressed"] != 10.0 || lost[1]["suppressed_count"] != 20.0 || lost[1]["count"] != 2.0 {
		t.Fatalf("the line after %s: %v", spillLogEvery, lost)
	}
	if got := f.counter(t, "portcullis_decisions_dropped_total"); got != 24 {
		t.Fatalf("dropped = %d, want 24", got)
	}
	_ = r.Close(context.Background())
}

func TestLogLimiter(t *testing.T) {
	var l logLimiter
	at := time.Unix(0, 0)
	l.now = func() time.Time { return at }
	steps := []struct {
		name            string
		after           time.Duration
		count           int
		ok              bool
		held, heldCount int
	}{
		{"the first occurrence", 0, 3, true, 0, 0},
		{"at once", 0, 4, false, 0, 0},
		{"just short of the interval", spillLogEvery - time.Nanosecond, 5, false, 0, 0},
		{"the interval after the first", time.Nanosecond, 1, true, 2, 9},
		{"again at once", 0, 7, false, 0, 0},
		{"long after", time.Hour, 1, true, 1, 7},
	}
	for _, s := range steps {
		at = at.Add(s.after)
		ok, held, heldCount := l.allow(s.count)
		if ok != s.ok || held != s.held || heldCount != s.heldCount {
			t.Errorf("%s: allow = %v %d %d, want %v %d %d", s.name, ok, held, heldCount, s.ok, s.held, s.heldCount)
		}
	}
}
