package testutil

import (
	"testing"
	"time"
)

func TestEventually(t *testing.T) {
	n := 0
	Eventually(t, 0, "three polls", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("polled %d times, want 3", n)
	}
}

// fatalTB records Fatalf instead of stopping the goroutine's test.
type fatalTB struct {
	testing.TB
	failed bool
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(string, ...any) {
	f.failed = true
	panic(f)
}

func TestEventuallyGivesUp(t *testing.T) {
	tb := &fatalTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != tb {
				t.Fatalf("recovered %v", r)
			}
		}()
		Eventually(tb, 20*time.Millisecond, "never", func() bool { return false })
	}()
	if !tb.failed {
		t.Fatal("Eventually did not fail the test")
	}
}
