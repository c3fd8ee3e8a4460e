//go:build !linux

package limits

import "errors"

func lowerThreadPriority() error {
	return errors.New("per-thread priority is only supported on Linux")
}
