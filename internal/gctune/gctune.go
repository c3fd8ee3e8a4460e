// Package gctune gives the garbage collector a minimum heap goal.
//
// The gateway keeps little live memory of its own when it serves few
// tenants (a few MB), but allocates about 100 KB per webhook request while
// decoding and evaluating it. With Go's default GOGC=100 the collector then
// runs every few dozen milliseconds, and each cycle's mark phase (several
// milliseconds of CPU, shared with the requests through assists) is what
// the slowest 1% of requests wait for on a gateway with one or two cores.
//
// A minimum heap goal spaces the cycles out: after every cycle the GC
// percentage is set so that the next cycle starts when the heap reaches the
// minimum, and never below Go's default, so a gateway whose live heap is
// already larger (many tenants' compiled policies) behaves exactly as with
// GOGC=100. GOMEMLIMIT, when set, still caps the heap.
package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

const (
	defaultPercent = 100
	// maxPercent bounds the percentage when the live heap is tiny (at
	// start), so that a burst of allocation cannot race far past the goal
	// before the next cycle corrects it.
	maxPercent = 10_000
)

// Tuner adjusts the GC percentage after each collection.
type Tuner struct {
	minHeap uint64

	mu      sync.Mutex
	stopped bool
	percent int
	sample  []metrics.Sample
}

// The GC percentage is process-wide, so is the tuner: Start while one
// runs shares it (tests run several gateways in one process), and the last
// Stop ends it.
var (
	activeMu sync.Mutex
	active   *Tuner
	users    int
)

// Start keeps the heap goal at least minHeap bytes. It returns nil, and
// changes nothing, when minHeap is 0 or the GOGC environment variable is set:
// an operator's explicit GOGC wins.
func Start(minHeap uint64) *Tuner {
	if minHeap == 0 || os.Getenv("GOGC") != "" {
		return nil
	}
	activeMu.Lock()
	defer activeMu.Unlock()
	users++
	if active != nil {
		return active
	}
	t := &Tuner{minHeap: minHeap, percent: defaultPercent,
		sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.tune()
	t.arm()
	active = t
	return t
}

// Percent is the GC percentage the tuner last set.
func (t *Tuner) Percent() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.percent
}

// Stop restores Go's default percentage and stops tuning, once every
// Start has been matched by a Stop.
func (t *Tuner) Stop() {
	if t == nil {
		return
	}
	activeMu.Lock()
	defer activeMu.Unlock()
	if users--; users > 0 {
		return
	}
	active = nil
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	t.percent = defaultPercent
	debug.SetGCPercent(defaultPercent)
}

// arm registers a cleanup on a fresh object, which runs after the cycle
// that finds it unreachable: once per collection. (The object holds a
// pointer so that the tiny allocator, which packs small pointer-free
// objects together and frees them late, does not hold it.)
func (t *Tuner) arm() {
	sentinel := &struct{ p *Tuner }{}
	runtime.AddCleanup(sentinel, func(t *Tuner) {
		if t.tune() {
			t.arm()
		}
	}, t)
}

// tune sets the percentage for the live heap the last cycle measured and
// reports whether tuning goes on.
func (t *Tuner) tune() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	metrics.Read(t.sample)
	var live uint64
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	p := percentFor(live, t.minHeap)
	if p != t.percent {
		t.percent = p
		debug.SetGCPercent(p)
	}
	return true
}

// percentFor is the percentage whose goal, live*(1+p/100), is minHeap,
// within [defaultPercent, maxPercent].
func percentFor(live, minHeap uint64) int {
	if live == 0 { // no cycle yet: Go's own first goal is small anyway
		return defaultPercent
	}
	if minHeap <= live*(1+defaultPercent/100) {
		return defaultPercent
	}
	p := (minHeap - live) * 100 / live
	return int(min(max(p, defaultPercent), maxPercent))
}
