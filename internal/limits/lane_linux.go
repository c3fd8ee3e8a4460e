package limits

import "golang.org/x/sys/unix"

// lowerThreadPriority sets the calling thread's nice value to 19. On Linux
// the nice value is per thread, and raising it needs no privilege.
func lowerThreadPriority() error {
	return unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19)
}
