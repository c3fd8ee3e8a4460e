// Package testutil holds helpers shared by the tests of several packages.
// It is imported by _test.go files only.
package testutil

import (
	"testing"
	"time"
)

// Limit bounds every wait. It is not a timing assertion, only a bound on a
// hung test: a loaded CI machine may take seconds where a laptop takes
// milliseconds.
const Limit = 20 * time.Second

// Eventually polls cond until it holds and returns how long that took; it
// fails the test when cond still does not hold after limit (Limit when 0).
func Eventually(t testing.TB, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	if limit <= 0 {
		limit = Limit
	}
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}
