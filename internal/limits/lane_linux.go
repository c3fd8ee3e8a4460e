package limits

import (
	"time"

	"golang.org/x/sys/unix"
)

// lowerThreadPriority sets the calling thread's nice value to 19. On Linux
// the nice value is per thread, and raising it needs no privilege.
func lowerThreadPriority() error {
	return unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19)
}

// threadCPUTime is the calling thread's CPU time so far.
func threadCPUTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
