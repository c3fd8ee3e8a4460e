package evaluator

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// Pooled compilers must not leak one policy's variables into the next:
// a policy that reads a variable only another policy declares must fail to
// compile as it does with the plugin's fresh compiler per policy, and a
// variable's type must be the one its own policy gives it.
func TestPooledCompilerIsolation(t *testing.T) {
	for round := 0; round < 3; round++ {
		objs := Objects{Policies: pols(
			policy("a-defines", variable("foo", "'x'"), validation("variables.foo == 'x'")),
			policy("b-reads-undeclared", validation("variables.foo == 'x'")),
			policy("c-other-type", variable("foo", "1"), validation("variables.foo == 1")),
			policy("d-wrong-type", variable("foo", "1"), validation("variables.foo == 'x'")),
		)}
		s := Compile(objs, CompileOptions{})
		errs := map[string]string{}
		for _, e := range s.CompileErrors() {
			errs[e.Name] += e.Field + ": " + e.Message + "\n"
		}
		if errs["a-defines"] != "" || errs["c-other-type"] != "" {
			t.Fatalf("round %d: unexpected compile errors %q", round, errs)
		}
		if !strings.Contains(errs["b-reads-undeclared"], "undefined field 'foo'") {
			t.Fatalf("round %d: b-reads-undeclared: got %q", round, errs["b-reads-undeclared"])
		}
		if !strings.Contains(errs["d-wrong-type"], "no matching overload") {
			t.Fatalf("round %d: d-wrong-type: got %q", round, errs["d-wrong-type"])
		}
	}
}

func TestPooledCompilerConcurrent(t *testing.T) {
	objs, _ := loadBaseline(t)
	want := Compile(objs, CompileOptions{}).CompileErrors()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 3; j++ {
				objs := Objects{Policies: pols(
					policy("x", variable("v", "'s'"), validation("variables.v == 's'")),
					policy("y", validation("variables.v == 's'")),
				)}
				if n := len(Compile(objs, CompileOptions{}).CompileErrors()); n != 1 {
					t.Errorf("got %d compile errors, want 1", n)
				}
				if got := Compile(objs, CompileOptions{}); got == nil {
					t.Error("nil snapshot")
				}
			}
		}()
	}
	wg.Wait()
	if got := Compile(objs, CompileOptions{}).CompileErrors(); len(got) != len(want) {
		t.Fatalf("compile errors changed: %v vs %v", got, want)
	}
}

// Shared compile results live only as long as a snapshot uses them.
func TestProgramCacheReleasesUnusedEntries(t *testing.T) {
	const expr = "object.metadata.name != 'cache-release-test'"
	has := func() bool {
		progCache.Lock()
		defer progCache.Unlock()
		for k := range progCache.m {
			if k.text == expr {
				return true
			}
		}
		return false
	}
	s := Compile(Objects{Policies: pols(policy("p", validation(expr)))}, CompileOptions{})
	s2 := Compile(Objects{Policies: pols(policy("q", validation(expr)))}, CompileOptions{})
	if !has() {
		t.Fatal("expected a cache entry")
	}
	if s.policies[0].validating.validations[0].expr.shared != s2.policies[0].validating.validations[0].expr.shared {
		t.Fatal("identical expressions did not share a program")
	}
	runtime.KeepAlive(s)
	runtime.KeepAlive(s2)
	s, s2 = nil, nil
	// Cleanups run on their own goroutine after a collection.
	testutil.Eventually(t, 5*time.Second, "the cache entry to be released", func() bool {
		runtime.GC()
		return !has()
	})
}
