//go:build !linux

package limits

import (
	"errors"
	"time"
)

func lowerThreadPriority() error {
	return errors.New("per-thread priority is only supported on Linux")
}

var processStart = time.Now()

// threadCPUTime falls back to wall time where a thread's CPU time cannot
// be read.
func threadCPUTime() time.Duration { return time.Since(processStart) }
