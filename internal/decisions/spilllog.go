package decisions

import (
	"sync"
	"time"
)

// spillLogEvery is how often a repeated spill failure is logged. A full
// disk fails every flush (5 a second at the default FlushInterval) and,
// with the queue full, every Record: one line per failure buried the rest
// of the log and cost more than the decisions it reported. The metrics
// still count every decision.
const spillLogEvery = 30 * time.Second

// logLimiter lets the first occurrence of a repeated failure be logged,
// then one every spillLogEvery, each with what it held back since the last
// line. Its zero value is ready; Record calls it from request goroutines.
type logLimiter struct {
	mu   sync.Mutex
	now  func() time.Time // time.Now when nil; tests set it
	last time.Time        // when a line was last let through; zero: never
	// held and heldCount are the occurrences held back since the last
	// line, and the sum of their counts (decisions).
	held, heldCount int
}

// allow records one occurrence about count decisions and says whether to
// log it now; if so, held and heldCount are the occurrences (and their
// decisions) held back since the last line, which the line should report.
func (l *logLimiter) allow(count int) (ok bool, held, heldCount int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now
	if l.now != nil {
		now = l.now
	}
	t := now()
	if !l.last.IsZero() && t.Sub(l.last) < spillLogEvery {
		l.held++
		l.heldCount += count
		return false, 0, 0
	}
	held, heldCount = l.held, l.heldCount
	l.last, l.held, l.heldCount = t, 0, 0
	return true, held, heldCount
}
