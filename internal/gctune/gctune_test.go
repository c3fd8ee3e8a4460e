package gctune

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/testutil"
)

func TestPercentFor(t *testing.T) {
	for _, tc := range []struct {
		live, min uint64
		want      int
	}{
		{0, 256 << 20, defaultPercent},
		{6 << 20, 256 << 20, 4166},             // a small gateway: next cycle at ~256 MiB
		{1 << 20, 256 << 20, maxPercent},       // capped
		{200 << 20, 256 << 20, defaultPercent}, // default goal (400 MiB) is already larger
		{4 << 30, 256 << 20, defaultPercent},
	} {
		if got := percentFor(tc.live, tc.min); got != tc.want {
			t.Errorf("percentFor(%d, %d) = %d, want %d", tc.live, tc.min, got, tc.want)
		}
	}
}

func currentPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestTunerFollowsCollections runs real collections: the percentage rises
// for a small heap after each cycle, follows the minimum when it changes
// with the live heap, and Stop restores the default.
func TestTunerFollowsCollections(t *testing.T) {
	t.Setenv("GOGC", "")
	tu := Start(512 << 20)
	if tu == nil {
		t.Fatal("Start returned nil")
	}
	defer tu.Stop()
	// Cleanups, which tune, run on their own goroutine after a collection.
	testutil.Eventually(t, 5*time.Second, "the GC percent to rise", func() bool {
		runtime.GC()
		return currentPercent() > defaultPercent
	})
	if p := currentPercent(); p <= defaultPercent || p != tu.Percent() {
		t.Fatalf("after collections the GC percent is %d (tuner says %d), want above %d", p, tu.Percent(), defaultPercent)
	}
	// A live heap above the minimum brings the default back.
	keep := make([][]byte, 0, 600)
	for range 600 {
		keep = append(keep, make([]byte, 1<<20))
	}
	testutil.Eventually(t, 5*time.Second, "the default GC percent with a large live heap", func() bool {
		runtime.GC()
		return tu.Percent() == defaultPercent
	})
	if p := currentPercent(); p != defaultPercent {
		t.Fatalf("with %d MiB live the GC percent is %d, want %d", len(keep), p, defaultPercent)
	}
	runtime.KeepAlive(keep)
	if again := Start(1 << 30); again != tu {
		t.Fatal("a second Start did not share the running tuner")
	}
	tu.Stop()
	if !tu.tune() {
		t.Fatal("the first of two Stops stopped the tuner")
	}
	tu.Stop()
	if tu.tune() {
		t.Fatal("the last Stop did not stop the tuner")
	}
	if p := currentPercent(); p != defaultPercent {
		t.Fatalf("after Stop the GC percent is %d", p)
	}
}

func TestExplicitGOGCWins(t *testing.T) {
	t.Setenv("GOGC", "50")
	if Start(256<<20) != nil {
		t.Fatal("Start tuned although GOGC is set")
	}
	if Start(0) != nil {
		t.Fatal("Start tuned with no minimum")
	}
}
