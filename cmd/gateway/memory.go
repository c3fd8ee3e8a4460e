package main

import (
	"math"
	"runtime/debug"
	"sync"
)

// defaultPolicyCacheBytes bounds the policy cache when no memory limit is
// known.
const defaultPolicyCacheBytes = 4 << 30

// applyMemoryHeadroom lowers the Go runtime's soft memory limit (GOMEMLIMIT,
// which the chart sets to the container's limit) by percent, so that
// memory outside the Go heap (stacks, the runtime, kernel buffers) fits
// too. It returns the limit in effect; math.MaxInt64 when there is none.
func applyMemoryHeadroom(percent int) int64 {
	// The limit is process-wide and tests start several gateways in one
	// process: lower it once, never twice.
	headroomOnce.Do(func() {
		limit := debug.SetMemoryLimit(-1)
		if limit != math.MaxInt64 && percent > 0 {
			debug.SetMemoryLimit(limit - limit/100*int64(percent))
		}
	})
	return debug.SetMemoryLimit(-1)
}

var headroomOnce sync.Once

// policyCacheBytes is --policy-cache-bytes, or when it is 0, 40% of the
// memory limit: the compiled policies then leave room for the requests'
// working set and the decision queue.
func policyCacheBytes(flag, memoryLimit int64) int64 {
	switch {
	case flag > 0:
		return flag
	case memoryLimit == math.MaxInt64:
		return defaultPolicyCacheBytes
	}
	return memoryLimit / 10 * 4
}
