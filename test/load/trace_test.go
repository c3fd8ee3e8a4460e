package load

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	rtrace "runtime/trace"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// traced is run at a fixed rate while taking execution traces of the
// gateway and of this client, and writing every request's start and
// latency, so that a slow answer can be placed on both timelines.
func (c *client) traced(t *testing.T, pprofAddr, dir string, rate int, du time.Duration) result {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lf, err := os.Create(filepath.Join(dir, "latencies.txt"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(lf)
	c.onResult = func(r *vegeta.Result) {
		fmt.Fprintf(w, "%d %d\n", r.Timestamp.UnixNano(), r.Latency.Nanoseconds())
	}
	cf, err := os.Create(filepath.Join(dir, "client.trace"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	secs := max(int(du/time.Second)-1, 1)
	go func() { done <- fetchPprof(pprofAddr, "trace", filepath.Join(dir, "gateway.trace"), secs) }()
	if err := rtrace.Start(cf); err != nil {
		t.Fatal(err)
	}
	r := c.run(rate, 0, du)
	rtrace.Stop()
	cf.Close()
	w.Flush()
	lf.Close()
	if err := <-done; err != nil {
		fmt.Printf("gateway trace: %v\n", err)
	}
	fmt.Printf("traces of %s at %d req/s: %s\n", c.srv.name, rate, dir)
	return r
}
